package coord

import (
	"os"
	"testing"
	"time"
)

type fakeProc struct{ pid int }

func (p fakeProc) Pid() int               { return p.pid }
func (p fakeProc) Wait() error            { select {} }
func (p fakeProc) Kill() error            { return nil }
func (p fakeProc) Signal(os.Signal) error { return nil }

// A node that dies on its own soon after its spawn, three times in a row,
// is a crash loop and is not replaced; nodes killed by actions are
// replaced however soon they die (chaos may kill every new node in turn).
func TestCrashLoopCountsOnlyDeathsNoActionCaused(t *testing.T) {
	now := time.Unix(1000, 0)
	newCoord := func() *core {
		return &core{cfg: Config{Respawn: true}, ft: spateFT{}, coordAddr: "coord:1", names: 1,
			nodes: map[string]*nodeState{"n1": {name: "n1", state: nodeLost, local: true}}, restarts: map[string]bool{}}
	}
	for _, killed := range []bool{true, false} {
		c := newCoord()
		lost, spawned := "n1", 0
		for range 5 {
			c.nodes[lost].killed = killed
			c.now = now
			name := c.respawn(lost)
			if name == "" {
				break
			}
			spawned++
			now = now.Add(time.Second) // dies a second after its spawn
			lost = name
		}
		if want := map[bool]int{true: 5, false: 3}[killed]; spawned != want {
			t.Errorf("killed by an action %v: %d respawns of 5 quick deaths, want %d", killed, spawned, want)
		}
	}
}

// The coordinator's own stall (its loop paused past the timeout: a GC
// pause, SIGSTOP, a slow disk) is not the nodes' silence: the heartbeats
// judged after it count only the time the coordinator was running.
func TestACoordinatorStallIsNotTheNodesSilence(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &core{cfg: Config{Heartbeat: 100 * time.Millisecond, Timeout: time.Second}, ft: spateFT{}, now: now,
		nodes: map[string]*nodeState{"n1": {name: "n1", state: nodeReady, lastBeat: now, joined: true}}, order: []string{"n1"}}
	c.checkHeartbeats()
	c.now = c.now.Add(3 * time.Second) // the loop stood still
	c.checkHeartbeats()
	if s := c.nodes["n1"].state; s != nodeReady {
		t.Fatalf("n1 is %s after the coordinator's own stall", s)
	}
	for range 8 { // running again: 800 ms of real silence
		c.now = c.now.Add(100 * time.Millisecond)
		c.checkHeartbeats()
	}
	if s := c.nodes["n1"].state; s != nodeReady {
		t.Fatalf("n1 is %s 800 ms into its silence", s)
	}
	for range 3 {
		c.now = c.now.Add(100 * time.Millisecond)
		c.checkHeartbeats()
	}
	if s := c.nodes["n1"].state; s != nodeLost {
		t.Fatalf("n1 is %s 1.1 s into its silence, past the timeout", s)
	}
}
