package control

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spate/events"
)

func serve(t *testing.T, f *Fake) *Client {
	t.Helper()
	s, err := Listen("127.0.0.1:0", "tok", f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, AddrFile), []byte(s.Addr()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStatusAndAct(t *testing.T) {
	f := NewFake(Status{Run: "r1", Nodes: []Node{{ID: "n1", PID: 42, State: "alive"}}})
	f.Refuse("scale", "scale: not supported by this job")
	c := serve(t, f)
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil || st.Run != "r1" || len(st.Nodes) != 1 || st.Nodes[0].PID != 42 {
		t.Fatalf("status = %+v, %v", st, err)
	}
	a := Action{Verb: "partition", Target: "majority", Args: map[string]string{"for": "5s"}}
	if _, err := c.Act(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := f.Actions(); len(got) != 1 || got[0].String() != "partition majority for=5s" {
		t.Fatalf("actions = %v", got)
	}
	if _, err := c.Act(ctx, Action{Verb: "scale", Target: "count"}); err == nil || err.Error() != "scale: not supported by this job" {
		t.Fatalf("refused scale: err = %v", err)
	}
}

func TestWrongTokenChangesNothing(t *testing.T) {
	f := NewFake(Status{})
	c := serve(t, f)
	c.Token = "not-the-token"
	if _, err := c.Act(context.Background(), Action{Verb: "kill", Target: "n1"}); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("status err = %v, want ErrUnauthorized", err)
	}
	if n := len(f.Actions()); n != 0 {
		t.Fatalf("%d actions taken with a wrong token", n)
	}
}

func TestEventsHistoryThenLive(t *testing.T) {
	f := NewFake(Status{})
	for i := 1; i <= 3; i++ {
		f.Publish(events.Event{Seq: uint64(i), Kind: events.Checkpoint})
	}
	c := serve(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []uint64
	published := false
	err := c.Events(ctx, 1, func(e events.Event) bool {
		got = append(got, e.Seq)
		if e.Seq == 3 && !published {
			published = true
			f.Publish(events.Event{Seq: 4, Kind: events.NodeLost})
		}
		return e.Seq < 4
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Fatalf("got seqs %v, want [2 3 4]", got)
	}
}

func TestDialWithoutCluster(t *testing.T) {
	if _, err := Dial(t.TempDir()); err == nil {
		t.Fatal("Dial of an empty directory succeeded")
	}
}
