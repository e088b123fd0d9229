package wire

import (
	"crypto/rand"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"spate/pki"
)

type joinResult struct {
	joined Joined
	err    error
}

// runJoin runs a join over a pipe: a node with nodeToken, a coordinator
// with coordToken, TLS when ca is not nil.
func runJoin(t *testing.T, nodeToken, coordToken string, ca *pki.CA) (joinResult, Hello, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	res := make(chan joinResult, 1)
	go func() {
		key, _ := pki.NewKey(rand.Reader)
		j, err := JoinClient(a, Hello{Role: RoleNode, Node: "n1"}, nodeToken,
			func() ([]byte, error) { return pki.CSR(rand.Reader, key) }, 5*time.Second)
		a.Close()
		res <- joinResult{j, err}
	}()
	var der []byte
	if ca != nil {
		der = ca.DER
	}
	h, err := JoinServer(b, 5*time.Second, coordToken, ca != nil, der,
		func(h Hello) error { return nil },
		func(h Hello, csr []byte) (Welcome, error) {
			w := Welcome{Node: h.Node, Run: "r1"}
			if ca != nil {
				var err error
				if w.Cert, err = ca.Sign(rand.Reader, csr, h.Node, time.Now()); err != nil {
					return w, err
				}
			}
			return w, nil
		})
	b.Close()
	return <-res, h, err
}

func TestJoinWithTheRightToken(t *testing.T) {
	ca, err := pki.NewCA(rand.Reader, "r1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ca   *pki.CA
	}{{"clear", nil}, {"tls", ca}} {
		t.Run(c.name, func(t *testing.T) {
			r, h, err := runJoin(t, "tok", "tok", c.ca)
			if err != nil || r.err != nil {
				t.Fatalf("coordinator %v, node %v", err, r.err)
			}
			if h.Token != "" || len(h.Nonce) != pki.NonceSize || r.joined.Node != "n1" || r.joined.TLS != (c.ca != nil) {
				t.Fatalf("hello %+v, joined %+v", h, r.joined)
			}
			if c.ca != nil && len(r.joined.Cert) == 0 {
				t.Fatal("a TLS join without a certificate")
			}
		})
	}
}

func TestJoinWithAWrongTokenIsRefusedOnBothSides(t *testing.T) {
	r, _, err := runJoin(t, "wrong", "tok", nil)
	if !errors.Is(r.err, pki.ErrBadProof) || !strings.Contains(r.err.Error(), "bad token") {
		t.Errorf("node: %v", r.err)
	}
	if !errors.Is(err, pki.ErrBadProof) || !strings.Contains(err.Error(), "refused our proof") {
		t.Errorf("coordinator: %v", err)
	}
}

func TestAHelloCarryingTheTokenIsRefused(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	done := make(chan error, 1)
	go func() {
		_, err := ClientHandshake(a, Hello{Token: "tok", Role: RoleNode}, 5*time.Second)
		done <- err
	}()
	_, err := JoinServer(b, 5*time.Second, "tok", false, nil, func(Hello) error { return nil },
		func(Hello, []byte) (Welcome, error) { t.Error("accepted"); return Welcome{}, nil })
	b.Close()
	if !errors.Is(err, pki.ErrBadProof) {
		t.Errorf("coordinator: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrRejected) {
		t.Errorf("node: %v", err)
	}
}

// BenchmarkJoin is one node's join, without TLS and with it (the
// challenge, the node's key and request, the CA's signature, the node's
// checks, and the TLS 1.3 handshake on top).
func BenchmarkJoin(b *testing.B) {
	ca, err := pki.NewCA(rand.Reader, "r1", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	coordID, err := ca.Identity(rand.Reader, pki.CoordName, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	for _, withTLS := range []bool{false, true} {
		name := "clear"
		if withTLS {
			name = "tls"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				a, c := net.Pipe()
				errc := make(chan error, 1)
				go func() {
					var der []byte
					if withTLS {
						der = ca.DER
					}
					var cert []byte
					_, err := JoinServer(c, 5*time.Second, "tok", withTLS, der, func(Hello) error { return nil },
						func(h Hello, csr []byte) (Welcome, error) {
							var err error
							if withTLS {
								cert, err = ca.Sign(rand.Reader, csr, "n1", time.Now())
							}
							return Welcome{Node: "n1", Cert: cert}, err
						})
					if err == nil && withTLS {
						_, _, err = TLSServer(c, coordID.ServerConfig(), 5*time.Second)
					}
					errc <- err
				}()
				key, _ := pki.NewKey(rand.Reader)
				j, err := JoinClient(a, Hello{Role: RoleNode}, "tok", func() ([]byte, error) { return pki.CSR(rand.Reader, key) }, 5*time.Second)
				if err == nil && withTLS {
					var id *pki.Identity
					if id, err = pki.NewIdentity(j.Node, key, j.Cert, j.CA, time.Now()); err == nil {
						_, err = TLSClient(a, id.ClientConfig(pki.CoordName), 5*time.Second)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				a.Close()
				c.Close()
			}
		})
	}
}
