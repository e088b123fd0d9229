package main

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spate/events"
	"spate/pki"
	"spate/wire"
)

// TestTLSRunRefusesStrangersAndVerifies is `spate up --tls` end to end: a
// node with a wrong token, a peer with a certificate of another run and a
// peer without TLS are each refused with a line naming them, a node is
// killed and recovered on TLS links, and the run verifies 0/0/0.
func TestTLSRunRefusesStrangersAndVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process TLS run")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out := startUp(t, "--tls", "--nodes", "3", "--duration", "10s", "--rate", "20000", "--interval", "300ms", "--data", dir)
	c := &cluster{t: t, dir: dir}
	var joined *events.Event
	waitFor(t, 60*time.Second, "the job to start", func() (bool, string) {
		evs := runEvents(t, dir)
		joined = findEvent(evs, events.NodeJoined, "n2")
		return joined != nil && findEvent(evs, events.JobStarted, "") != nil, fmt.Sprintf("%d events", len(evs))
	})
	if fi, err := os.Stat(filepath.Join(dir, pki.KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the CA's key: %v, mode %v", err, fi.Mode())
	}
	peerAddr := joined.Fields.(events.NodeJoinedFields).Listen

	// A node with a wrong token: refused, with the token never sent.
	code, _, errOut := spate(t, "node", "--join", coordAddr(t, dir), "--token", "wrong")
	if code == 0 || !strings.Contains(errOut, "bad token") {
		t.Fatalf("node with a wrong token: exit %d: %s", code, errOut)
	}

	// A peer with a certificate of another run, claiming to be n1.
	other, err := pki.NewCA(rand.Reader, "another-run", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.Identity(rand.Reader, "n1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg := stranger.ClientConfig("n2")
	cfg.InsecureSkipVerify = true // it does not know this run's CA; what matters is that n2 refuses it
	strangerLocal := intrude(t, peerAddr, func(conn net.Conn) {
		tc := tls.Client(conn, cfg)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err == nil {
			_, err = wire.ClientHandshake(tc, wire.Hello{Role: wire.RolePeer, Node: "n1"}, 10*time.Second)
			if err == nil {
				t.Error("n2 welcomed a peer with a certificate of another run")
			}
		}
	})
	// A peer without TLS, with the right token even.
	clearLocal := intrude(t, peerAddr, func(conn net.Conn) {
		if _, err := wire.ClientHandshake(conn, wire.Hello{Token: runToken(t, dir), Role: wire.RolePeer, Node: "n3"}, 10*time.Second); err == nil {
			t.Error("n2 welcomed a peer without TLS")
		}
	})
	for _, who := range []string{strangerLocal, clearLocal} {
		waitFor(t, 30*time.Second, "n2's refusal of "+who, func() (bool, string) {
			b, _ := os.ReadFile(filepath.Join(dir, "logs", "n2.log"))
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "refused peer connection from "+who) {
					return strings.Contains(line, "no valid certificate of this run"), line
				}
			}
			return false, "no line"
		})
	}

	// A kill: the respawned node joins, gets its certificate, and links.
	c.chaos("kill", "n3")
	c.waitEvent(events.RecoveryDone, "")

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("up: %v\n%s", err, out)
		}
	case <-time.After(3 * time.Minute):
		c.dump()
		t.Fatal("up did not finish within 3 minutes")
	}
	c.verifyOK()
	evs := runEvents(t, dir)
	var refused []string
	for _, e := range evs {
		if e.Kind == events.NodeRefused {
			refused = append(refused, e.Text)
		}
	}
	if len(refused) < 3 {
		t.Errorf("node_refused events: %q, want the wrong token and both peers", refused)
	}
	if !strings.Contains(out.String(), "links are TLS 1.3") {
		t.Error("up did not say its links are TLS")
	}
	var ri struct{ TLS bool }
	if b, err := os.ReadFile(filepath.Join(dir, "run.json")); err != nil || json.Unmarshal(b, &ri) != nil || !ri.TLS {
		t.Errorf("run.json does not say tls: %v", err)
	}
}

// intrude dials addr, runs fn on the connection, closes it, and returns
// the connection's local address (what the refusal must name).
func intrude(t *testing.T, addr string, fn func(net.Conn)) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fn(conn)
	return conn.LocalAddr().String()
}
