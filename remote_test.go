package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"spate/events"
)

// Nodes on other hosts, built on one machine (issue 22, item 2): the
// coordinator runs here with --local K, and every other node joins it as
// `spate node --join ADDR --token T` from a mount namespace of its own, in
// which the run directory is hidden under an empty tmpfs, from a working
// directory of its own, as a user of its own, over loopback.
//
// Why a shell in `unshare --mount` rather than a re-exec'd Go child that
// mounts with syscall: the mount, the change of user and the exec are
// three lines a reader can paste into a terminal to see the same thing,
// and the shell outlives the node inside the namespace, so that after the
// node exits (or is killed) it can list what the node left in its view of
// the run directory (hidden-view), which the test reads.

// remoteUID is the user a remote node runs as when the test runs as root:
// a file of the run directory owned by it was written by a remote node.
const remoteUID = 65534

// nsKit is how this machine makes a remote node's namespace.
type nsKit struct {
	unshare []string // the unshare command and its flags
	setpriv string   // "" when the node keeps the test's user
}

// namespacesOrSkip finds how to make a mount namespace here and proves it
// by hiding a directory under a tmpfs, or skips the test saying why.
func namespacesOrSkip(t *testing.T) nsKit {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("remote-node tests need Linux mount namespaces (GOOS=%s)", runtime.GOOS)
	}
	un, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("remote-node tests need unshare (util-linux): not on PATH")
	}
	kit := nsKit{unshare: []string{un, "--mount"}}
	if os.Geteuid() != 0 {
		kit.unshare = append(kit.unshare, "--map-root-user")
	}
	probe := t.TempDir()
	if err := os.WriteFile(filepath.Join(probe, "seen"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kit.unshare[0], append(kit.unshare[1:], "sh", "-c",
		`mount -t tmpfs none "$1" && test ! -e "$1/seen"`, "sh", probe)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot make a mount namespace with a tmpfs here (%s: %v: %s): remote-node tests skipped",
			strings.Join(kit.unshare, " "), err, strings.TrimSpace(string(out)))
	}
	if _, err := os.Stat(filepath.Join(probe, "seen")); err != nil {
		t.Fatalf("the probe's tmpfs leaked out of its namespace: %v", err)
	}
	if os.Geteuid() == 0 {
		if sp, err := exec.LookPath("setpriv"); err == nil {
			kit.setpriv = sp
		}
	}
	// The remote user must be able to run the binary.
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	return kit
}

// remote is a node joined from its own namespace.
type remote struct {
	t    *testing.T
	cmd  *exec.Cmd // the shell inside the namespace
	work string    // its working directory
	out  *lockedBuffer
	done chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRemote joins a node to the coordinator at addr from a namespace of
// its own. hide are the directories it must not see (the run directory,
// files of the coordinator's host), none for a node that sees them (a
// shared file system: the negative control).
func startRemote(t *testing.T, kit nsKit, addr, token string, hide ...string) *remote {
	t.Helper()
	work, err := os.MkdirTemp(t.TempDir(), "remote-")
	if err != nil {
		t.Fatal(err)
	}
	asUser := ""
	if kit.setpriv != "" {
		if err := os.Chmod(work, 0o777); err != nil {
			t.Fatal(err)
		}
		asUser = fmt.Sprintf(`"%s" --reuid=%d --regid=%d --clear-groups `, kit.setpriv, remoteUID, remoteUID)
	}
	script := `set -e
addr=$1 token=$2
shift 2
for d in "$@"; do mount -t tmpfs none "$d"; done
cd "$SPATE_WORK"
set +e
` + asUser + `"$SPATE_BIN" node --join "$addr" --token "$token"
rc=$?
if [ $# -gt 0 ]; then find "$@" -mindepth 1 > "$SPATE_WORK/hidden-view"; else : > "$SPATE_WORK/hidden-view"; fi
exit $rc`
	cmd := exec.Command(kit.unshare[0], append(append(kit.unshare[1:], "sh", "-c", script, "sh", addr, token), hide...)...)
	cmd.Env = append(os.Environ(), "SPATE_WORK="+work, "SPATE_BIN="+bin, "TMPDIR="+work)
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the node and its shell, killed together on cleanup
	r := &remote{t: t, cmd: cmd, work: work, out: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	return r
}

// wait waits for the remote's shell to end and returns the node's exit code.
func (r *remote) wait() int {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return exitCode(err)
	case <-time.After(2 * time.Minute):
		r.t.Fatalf("remote node in %s did not exit within 2 minutes of the run's end\n%s", r.work, r.out.String())
		return -1
	}
}

// hiddenView is what the node left in its view of the run directory (the
// tmpfs): a node that still assumes it sees the run directory writes there
// and its writes are lost with the namespace.
func (r *remote) hiddenView() string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.work, "hidden-view"))
	if err != nil {
		r.t.Fatalf("remote in %s: no hidden-view (%v): did its namespace hide the run directory?\n%s", r.work, err, r.out.String())
	}
	return strings.TrimSpace(string(b))
}

// foreignFiles lists what in dir is not owned by this process's user: in
// a lab whose remote nodes run as remoteUID, what they wrote into the run
// directory themselves instead of through the coordinator.
func foreignFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, fmt.Sprintf("%s (uid %d)", rel, st.Uid))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return out
}

// openPath lets every user through the directories above dir, up to the
// system's temporary directory (t.TempDir makes them 0700), so that what
// keeps a remote node out of the run directory is its namespace alone.
func openPath(t *testing.T, dir string) {
	t.Helper()
	top := filepath.Clean(os.TempDir())
	for p := filepath.Dir(dir); strings.HasPrefix(p, top+string(filepath.Separator)); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// lab is a run of `spate up --listen 127.0.0.1:0 --local K` with its
// other nodes joined from namespaces of their own.
type lab struct {
	*cluster
	remotes map[string]*remote // by node name
	wait    func()
}

// startLab starts up with nodes nodes, local of them spawned here, and
// joins the others one by one (so that the k-th joiner is n(local+k)).
func startLab(t *testing.T, kit nsKit, nodes, local int, hide []string, extra ...string) *lab {
	t.Helper()
	c, wait := startFT(t, "spate", nodes, append([]string{"--local", fmt.Sprint(local), "--listen", "127.0.0.1:0"}, extra...)...)
	addr := coordAddr(t, c.dir)
	token := runToken(t, c.dir)
	l := &lab{cluster: c, remotes: map[string]*remote{}, wait: wait}
	openPath(t, c.dir) // only the namespace hides the run directory, not its permissions
	hide = append([]string{c.dir}, hide...)
	for i := local + 1; i <= nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		l.remotes[name] = startRemote(t, kit, addr, token, hide...)
		c.waitEvent(events.NodeJoined, name)
	}
	return l
}

// finish waits for the run and its remote nodes to end, then checks what
// every remote-node test checks: 0/0/0, traffic on loopback, the remote
// nodes' store, and a run directory no remote node wrote into.
func (l *lab) finish(kit nsKit) {
	t := l.t
	t.Helper()
	l.wait()
	for name, r := range l.remotes {
		r.wait()
		if v := r.hiddenView(); v != "" {
			t.Errorf("remote %s wrote into its (hidden) view of the run directory, lost with its namespace:\n%s", name, v)
		}
		if left, _ := filepath.Glob(filepath.Join(r.work, "spate-*")); r.cmd.ProcessState.ExitCode() == 0 && len(left) > 0 {
			t.Errorf("remote %s exited and left its own files behind: %v", name, left)
		}
		if !strings.Contains(r.out.String(), "checkpoints and output in the coordinator") {
			t.Errorf("remote %s did not keep its checkpoints and output in the coordinator:\n%s", name, r.out.String())
		}
	}
	if kit.setpriv != "" {
		if bad := foreignFiles(t, l.dir); len(bad) > 0 {
			t.Errorf("remote nodes wrote into the run directory themselves: %v", bad)
		}
	}
	l.checkLoopback()
	l.verifyOK()
}

// checkLoopback fails unless the coordinator and every node listened on
// loopback: the lab's traffic never left the machine.
func (l *lab) checkLoopback() {
	t := l.t
	t.Helper()
	addrs := []string{coordAddr(t, l.dir)}
	for _, e := range l.events() {
		if f, ok := e.Fields.(events.NodeJoinedFields); ok && e.Kind == events.NodeJoined {
			addrs = append(addrs, f.Listen)
		}
	}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			t.Errorf("address %q is not on loopback (%v)", a, err)
		}
	}
}

// placedOn returns the nodes inst's recovery was placed on.
func (l *lab) placedOn(inst string) []string {
	var out []string
	for _, e := range l.waitRecoveryPlaced(inst) {
		out = append(out, e.Node)
	}
	return out
}

// hostedBy returns an instance first placed on node.
func (l *lab) hostedBy(node string) string {
	l.t.Helper()
	var inst string
	waitFor(l.t, 60*time.Second, "an instance on "+node, func() (bool, string) {
		for _, e := range l.events() {
			if e.Kind == events.InstancePlaced && e.Node == node {
				inst = e.Instance
				return true, ""
			}
		}
		return false, "none placed yet"
	})
	return inst
}

func TestRemoteNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test of nodes in mount namespaces of their own")
	}
	kit := namespacesOrSkip(t)
	t.Run("remote killed, recovered on a local node", func(t *testing.T) {
		l := startLab(t, kit, 3, 2, nil)
		victim := l.hostedBy("n3")
		l.waitEvent(events.Checkpoint, "")
		l.signal("n3", syscall.SIGKILL)
		for _, n := range l.placedOn(victim) {
			if n != "n1" && n != "n2" {
				t.Errorf("%s of the killed remote n3 recovered on %s, not on a local node", victim, n)
			}
		}
		l.waitEvent(events.RecoveryRestored, "")
		l.finish(kit)
		for _, e := range l.events() {
			if f, ok := e.Fields.(events.NodeSpawnedFields); ok && f.Replaces == "n3" {
				t.Errorf("the coordinator spawned %s in place of the remote n3: %s", e.Node, e.Line())
			}
		}
	})
	t.Run("local killed, recovered on a remote node", func(t *testing.T) {
		l := startLab(t, kit, 3, 1, nil)
		victim := l.hostedBy("n1")
		l.waitEvent(events.Checkpoint, "")
		l.signal("n1", syscall.SIGKILL)
		for _, n := range l.placedOn(victim) {
			if n != "n2" && n != "n3" {
				t.Errorf("%s of the killed local n1 recovered on %s, not on a remote node", victim, n)
			}
		}
		l.waitEvent(events.RecoveryRestored, "")
		l.finish(kit)
	})
	t.Run("a trace on the coordinator's host only", func(t *testing.T) {
		src := filepath.Join("..", "shared", "traces", "load", "nasa_19950801.tsv.gz")
		b, err := os.ReadFile(src)
		if err != nil {
			t.Skipf("no trace to replay: %v", err)
		}
		home := filepath.Join(t.TempDir(), "coordinator-host")
		if err := os.MkdirAll(home, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "nasa.tsv.gz"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		openPath(t, home)
		l := startLab(t, kit, 3, 1, []string{home}, "--source", "trace:"+filepath.Join(home, "nasa.tsv.gz")+"?time=time&key=host&value=bytes",
			"--rate", "0", "--window", "60s", "--duration", "0")
		if h := l.host("source#1"); h == "n1" {
			t.Fatalf("source#1 on the local n1: no remote node reads the trace")
		}
		l.finish(kit)
	})
	t.Run("remote partitioned past the timeout is fenced", func(t *testing.T) {
		l := startLab(t, kit, 3, 1, nil, "--timeout", "2s")
		l.waitEvent(events.Checkpoint, "")
		if code, out, errOut := spate(t, "chaos", "partition", "n2", "--for", "5s", "--data", l.dir); code != 0 {
			t.Fatalf("chaos partition n2: exit %d: %s%s", code, out, errOut)
		}
		l.waitEvent(events.NodeLost, "n2")
		l.waitEvent(events.RecoveryRestored, "")
		l.finish(kit)
	})
}

// TestRunDirCheckSeesARemoteNodeWritingItself is the check's negative
// control: a remote node that can see the run directory (as on a shared
// file system) and is told --store dir writes its checkpoints and its
// sink output there itself, and foreignFiles says so. The same node with
// the run directory hidden refuses --store dir with one line naming it.
func TestRunDirCheckSeesARemoteNodeWritingItself(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test of nodes in mount namespaces of their own")
	}
	kit := namespacesOrSkip(t)
	t.Run("seen and told --store dir", func(t *testing.T) {
		if kit.setpriv == "" {
			t.Skip("needs root and setpriv: the remote node runs as another user, whose files the check looks for")
		}
		c, wait := startFT(t, "spate", 2, "--local", "1", "--listen", "127.0.0.1:0", "--store", "dir", "--duration", "4s")
		addr, token := coordAddr(t, c.dir), runToken(t, c.dir)
		// What a shared file system would let the remote user do.
		openPath(t, c.dir)
		for _, p := range []string{c.dir, filepath.Join(c.dir, "checkpoints"), filepath.Join(c.dir, "output")} {
			if err := os.Chmod(p, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(filepath.Join(c.dir, "token"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := startRemote(t, kit, addr, token)
		c.waitEvent(events.NodeJoined, "n2")
		wait()
		r.wait()
		if !strings.Contains(r.out.String(), "checkpoints and output in the run directory") {
			t.Fatalf("the remote node did not use the run directory:\n%s", r.out.String())
		}
		bad := strings.Join(foreignFiles(t, c.dir), "\n")
		for _, want := range []string{"checkpoints/", "output/"} {
			if !strings.Contains(bad, want) {
				t.Errorf("the check did not see the remote node's own files under %s; it saw:\n%s", want, bad)
			}
		}
		c.verifyOK()
	})
	t.Run("hidden and told --store dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		cmd, out := startUp(t, "--nodes", "2", "--local", "1", "--listen", "127.0.0.1:0", "--store", "dir", "--duration", "4s", "--data", dir)
		r := startRemote(t, kit, coordAddr(t, dir), runToken(t, dir), dir)
		err := cmd.Wait()
		r.wait()
		if err == nil {
			t.Fatalf("up ran with a node that cannot see the run directory on --store dir\n%s", out)
		}
		if !strings.Contains(r.out.String(), "--store dir: node n2 cannot see the run directory") {
			t.Errorf("the remote node's refusal does not name --store dir:\n%s", r.out.String())
		}
		if !strings.Contains(out.String(), "--store dir: node n2 cannot see the run directory") {
			t.Errorf("up does not say why the run could not start:\n%s", out)
		}
	})
}
