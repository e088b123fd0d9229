package bench

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"spate/coord"
)

func TestKillNodeWaitsForTheDeath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if dead, known := coord.ProcDead(os.Getpid()); dead || !known {
		t.Fatalf("this process: dead %v, known %v; want alive and known", dead, known)
	}
	if dead, known := coord.ProcDead(0); !dead || !known {
		t.Fatalf("no such process: dead %v, known %v; want dead and known", dead, known)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer func() { _ = cmd.Process.Kill() }() // in case killNode did not
	if _, err := killNode(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// Not yet reaped: a zombie, which killNode must count as dead.
	if dead, _ := coord.ProcDead(cmd.Process.Pid); !dead {
		t.Fatal("killNode returned before the process died")
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("sleep exited cleanly; it was to be killed")
	}
}
