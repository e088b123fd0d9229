package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const token = "8c1f6a3e-2b7d-4e59-a0c4-1d2e3f405162"

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newCA(t *testing.T, run string) *CA {
	t.Helper()
	ca, err := NewCA(rand.Reader, run, now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func challenge(t *testing.T, ca *CA) Challenge {
	t.Helper()
	a, err := NewNonce(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewNonce(rand.Reader)
	ch := Challenge{NodeNonce: a, CoordNonce: b}
	if ca != nil {
		ch.TLS, ch.CA = true, ca.DER
	}
	return ch
}

func TestTheRightTokenPassesBothProofs(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		var ca *CA
		var csr []byte
		if withTLS {
			ca = newCA(t, "r1")
			key, _ := NewKey(rand.Reader)
			csr, _ = CSR(rand.Reader, key)
		}
		ch := challenge(t, ca)
		cp, err := CoordProof(token, ch)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckCoordProof(token, ch, cp); err != nil {
			t.Errorf("tls %v: the coordinator's proof: %v", withTLS, err)
		}
		np, err := NodeProof(token, ch, csr)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckNodeProof(token, ch, csr, np); err != nil {
			t.Errorf("tls %v: the node's proof: %v", withTLS, err)
		}
		if bytes.Contains(cp, []byte(token)) || bytes.Contains(np, []byte(token)) {
			t.Error("a proof holds the token")
		}
	}
}

func TestAWrongTokenIsRefusedWithAClearError(t *testing.T) {
	ca := newCA(t, "r1")
	key, _ := NewKey(rand.Reader)
	csr, _ := CSR(rand.Reader, key)
	ch := challenge(t, ca)
	np, _ := NodeProof("wrong", ch, csr)
	err := CheckNodeProof(token, ch, csr, np)
	if !errors.Is(err, ErrBadProof) || !strings.Contains(err.Error(), "bad token") {
		t.Errorf("a node with a wrong token: %v", err)
	}
	cp, _ := CoordProof("wrong", ch)
	err = CheckCoordProof(token, ch, cp)
	if !errors.Is(err, ErrBadProof) || !strings.Contains(err.Error(), "wrong --token") {
		t.Errorf("a coordinator with a wrong token: %v", err)
	}
}

func TestAReplayedAnswerIsRefused(t *testing.T) {
	first := challenge(t, nil)
	recorded, _ := NodeProof(token, first, nil)
	// The same node nonce even (a node that reuses its hello): the
	// coordinator's fresh nonce alone makes the old answer wrong.
	second := challenge(t, nil)
	second.NodeNonce = first.NodeNonce
	if err := CheckNodeProof(token, second, nil, recorded); !errors.Is(err, ErrBadProof) {
		t.Fatalf("a replayed answer: %v", err)
	}
	// And an old coordinator proof does not answer a node's fresh nonce.
	oldCoord, _ := CoordProof(token, first)
	third := challenge(t, nil)
	third.CoordNonce = first.CoordNonce
	if err := CheckCoordProof(token, third, oldCoord); !errors.Is(err, ErrBadProof) {
		t.Fatalf("a replayed coordinator proof: %v", err)
	}
}

func TestARogueCAIsDetected(t *testing.T) {
	ca, rogue := newCA(t, "r1"), newCA(t, "evil")
	ch := challenge(t, ca)
	proof, _ := CoordProof(token, ch) // the real coordinator's, over its CA
	swapped := ch
	swapped.CA = rogue.DER // a man in the middle swaps the CA, keeps the proof
	if err := CheckCoordProof(token, swapped, proof); !errors.Is(err, ErrBadProof) {
		t.Fatalf("a swapped CA: %v", err)
	}
	downgraded := ch
	downgraded.TLS, downgraded.CA = false, nil // or strips TLS
	if err := CheckCoordProof(token, downgraded, proof); !errors.Is(err, ErrBadProof) {
		t.Fatalf("a downgrade to no TLS: %v", err)
	}
	// A swapped certificate request is refused by the coordinator.
	k1, _ := NewKey(rand.Reader)
	k2, _ := NewKey(rand.Reader)
	csr1, _ := CSR(rand.Reader, k1)
	csr2, _ := CSR(rand.Reader, k2)
	np, _ := NodeProof(token, ch, csr1)
	if err := CheckNodeProof(token, ch, csr2, np); !errors.Is(err, ErrBadProof) {
		t.Fatalf("a swapped request: %v", err)
	}
}

func TestBadNoncesAreRefusedNotProved(t *testing.T) {
	ch := challenge(t, nil)
	ch.CoordNonce = ch.CoordNonce[:8]
	if _, err := CoordProof(token, ch); !errors.Is(err, ErrBadProof) {
		t.Errorf("a short nonce: %v", err)
	}
	ch = challenge(t, nil)
	ch.TLS = true // TLS without a CA
	if _, err := NodeProof(token, ch, nil); !errors.Is(err, ErrBadProof) {
		t.Errorf("tls without a CA: %v", err)
	}
}

func TestTheCASavesWithAPrivateKeyAndLoadsBack(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "r1")
	if err := ca.Save(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key: %v, mode %v", err, fi.Mode())
	}
	back, err := LoadCA(dir)
	if err != nil || !bytes.Equal(back.DER, ca.DER) {
		t.Fatalf("LoadCA: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(dir); !errors.Is(err, ErrBadCertificate) || !strings.Contains(err.Error(), KeyFile) {
		t.Errorf("a damaged key: %v", err)
	}
}

func TestSignRefusesABadRequest(t *testing.T) {
	ca := newCA(t, "r1")
	if _, err := ca.Sign(rand.Reader, []byte("not a csr"), "n1", now); !errors.Is(err, ErrBadCertificate) {
		t.Errorf("junk: %v", err)
	}
	key, _ := NewKey(rand.Reader)
	csr, _ := CSR(rand.Reader, key)
	csr[len(csr)-1] ^= 1 // the signature no longer holds
	if _, err := ca.Sign(rand.Reader, csr, "n1", now); !errors.Is(err, ErrBadCertificate) {
		t.Errorf("a badly signed request: %v", err)
	}
}

// identity is a node's identity from ca, as a join makes it.
func identity(t *testing.T, ca *CA, name string) *Identity {
	t.Helper()
	key, _ := NewKey(rand.Reader)
	csr, _ := CSR(rand.Reader, key)
	der, err := ca.Sign(rand.Reader, csr, name, now)
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewIdentity(name, key, der, ca.DER, now)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// handshake runs mutual TLS over a pipe: client dials expecting want.
func handshake(client, server *Identity, want string) (clientErr, serverErr error, name string) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := tls.Server(b, server.ServerConfig())
		if serverErr = s.Handshake(); serverErr == nil {
			name, serverErr = PeerName(s.ConnectionState())
		}
		b.Close()
	}()
	c := tls.Client(a, client.ClientConfig(want))
	clientErr = c.Handshake()
	a.Close()
	<-done
	return
}

func TestMutualTLSChecksTheRunAndTheName(t *testing.T) {
	ca, other := newCA(t, "r1"), newCA(t, "r2")
	n1, n2 := identity(t, ca, "n1"), identity(t, ca, "n2")
	if cerr, serr, name := handshake(n1, n2, "n2"); cerr != nil || serr != nil || name != "n1" {
		t.Fatalf("same run: client %v, server %v, name %q", cerr, serr, name)
	}
	// A dialer expecting n3 refuses n2's certificate.
	if cerr, _, _ := handshake(n1, n2, "n3"); cerr == nil {
		t.Error("a peer with another name's certificate was accepted")
	}
	// A certificate of another run is refused by the listener.
	stranger := identity(t, other, "n1")
	if _, serr, _ := handshake(stranger, n2, "n2"); serr == nil {
		t.Error("a certificate of another run was accepted")
	}
	// An identity from a certificate of another CA cannot even be made.
	key, _ := NewKey(rand.Reader)
	csr, _ := CSR(rand.Reader, key)
	der, _ := other.Sign(rand.Reader, csr, "n1", now)
	if _, err := NewIdentity("n1", key, der, ca.DER, now); !errors.Is(err, ErrBadCertificate) {
		t.Errorf("a certificate of another CA: %v", err)
	}
	if _, err := PeerName(tls.ConnectionState{}); !errors.Is(err, ErrBadCertificate) {
		t.Errorf("an unverified connection has a name: %v", err)
	}
}
