package wire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"spate/pki"
)

// The join: how a node authenticates to the coordinator without sending
// the token (SPEC.md, "Joining the coordinator"). The proofs are pki's;
// these functions carry them in frames.

// Joined is what a node learns from a successful join.
type Joined struct {
	Welcome
	TLS bool   // the link (and every peer link) goes on in TLS
	CA  []byte // with TLS: the run's CA certificate, vouched for by the coordinator's proof
}

// JoinClient runs a node's side of the join on c: hello (h, with a fresh
// nonce and never a token), the coordinator's challenge and its proof
// checked, the node's proof (over the request csr makes, with TLS), the
// welcome. A coordinator whose proof does not match gets a reject and the
// error wraps pki.ErrBadProof; a refusal wraps ErrRejected.
func JoinClient(c net.Conn, h Hello, token string, csr func() ([]byte, error), timeout time.Duration) (Joined, error) {
	var j Joined
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	fail := func(err error) (Joined, error) {
		return j, fmt.Errorf("join %s: %w", c.RemoteAddr(), err)
	}
	nonce, err := pki.NewNonce(rand.Reader)
	if err != nil {
		return fail(err)
	}
	h.Token, h.Nonce = "", nonce
	if err := writeHandshake(c, THello, h); err != nil {
		return fail(err)
	}
	var ch Challenge
	if err := readAnswer(c, TChallenge, &ch); err != nil {
		return fail(err)
	}
	pch := pki.Challenge{NodeNonce: nonce, CoordNonce: ch.Nonce, TLS: ch.TLS, CA: ch.CA}
	if err := pki.CheckCoordProof(token, pch, ch.Proof); err != nil {
		_ = writeHandshake(c, TReject, Reject{Reason: "bad token: your proof does not match the node's token"})
		return fail(err)
	}
	var req []byte
	if ch.TLS {
		if req, err = csr(); err != nil {
			return fail(err)
		}
	}
	proof, err := pki.NodeProof(token, pch, req)
	if err != nil {
		return fail(err)
	}
	if err := writeHandshake(c, TProve, Prove{Proof: proof, CSR: req}); err != nil {
		return fail(err)
	}
	if err := readAnswer(c, TWelcome, &j.Welcome); err != nil {
		return fail(err)
	}
	if ch.TLS && len(j.Cert) == 0 {
		return fail(errors.New("welcome without a certificate in a TLS join"))
	}
	j.TLS, j.CA = ch.TLS, ch.CA
	return j, nil
}

// readAnswer reads one handshake frame: want (decoded into v), or a
// reject (an error wrapping ErrRejected), or anything else (an error).
func readAnswer(c net.Conn, want Type, v any) error {
	t, p, err := readHandshake(c)
	if err != nil {
		return err
	}
	switch t {
	case want:
		return DecodeJSON(t, p, v)
	case TReject:
		var r Reject
		if err := DecodeJSON(t, p, &r); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", ErrRejected, r.Reason)
	}
	return fmt.Errorf("handshake: want %v frame, got %v", want, t)
}

// JoinServer runs the coordinator's side of a join on c. check sees the
// hello first (its role, where it comes from); then the challenge goes out
// with useTLS, the CA certificate ca (with TLS) and the coordinator's
// proof; the node's proof is checked; accept names the node and, with
// TLS, certifies its request. Every refusal is answered with a reject
// (but for a node that itself refused our proof) and returned.
func JoinServer(c net.Conn, timeout time.Duration, token string, useTLS bool, ca []byte,
	check func(Hello) error, accept func(h Hello, csr []byte) (Welcome, error)) (Hello, error) {
	var h Hello
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	reject := func(err error) (Hello, error) {
		_ = writeHandshake(c, TReject, Reject{Reason: err.Error()})
		return h, err
	}
	h, err := readHello(c)
	if err != nil {
		return h, err
	}
	if h.Token != "" {
		return reject(fmt.Errorf("%w: a node's hello must not carry the token (the join is a challenge: wire/SPEC.md)", pki.ErrBadProof))
	}
	if err := check(h); err != nil {
		return reject(err)
	}
	nonce, err := pki.NewNonce(rand.Reader)
	if err != nil {
		return reject(err)
	}
	if !useTLS {
		ca = nil
	}
	pch := pki.Challenge{NodeNonce: h.Nonce, CoordNonce: nonce, TLS: useTLS, CA: ca}
	proof, err := pki.CoordProof(token, pch)
	if err != nil {
		return reject(err)
	}
	if err := writeHandshake(c, TChallenge, Challenge{Nonce: nonce, TLS: useTLS, CA: ca, Proof: proof}); err != nil {
		return h, fmt.Errorf("handshake: %w", err)
	}
	var pr Prove
	if err := readAnswer(c, TProve, &pr); err != nil {
		if errors.Is(err, ErrRejected) {
			return h, fmt.Errorf("the node refused our proof (%w): it has another token", pki.ErrBadProof)
		}
		return h, fmt.Errorf("handshake: %w", err)
	}
	if err := pki.CheckNodeProof(token, pch, pr.CSR, pr.Proof); err != nil {
		return reject(err)
	}
	if useTLS && len(pr.CSR) == 0 {
		return reject(fmt.Errorf("%w: no certificate request in a TLS join", pki.ErrBadCertificate))
	}
	w, err := accept(h, pr.CSR)
	if err != nil {
		return reject(err)
	}
	return h, writeHandshake(c, TWelcome, w)
}

// TLSClient runs a TLS handshake as the client on c within timeout.
func TLSClient(c net.Conn, cfg *tls.Config, timeout time.Duration) (*tls.Conn, error) {
	tc := tls.Client(c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("tls with %s: %w", c.RemoteAddr(), err)
	}
	return tc, nil
}

// TLSServer runs a TLS handshake as the server on c within timeout and
// returns the connection and the name in the client's verified
// certificate.
func TLSServer(c net.Conn, cfg *tls.Config, timeout time.Duration) (*tls.Conn, string, error) {
	tc := tls.Server(c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, "", fmt.Errorf("no valid certificate of this run: %w", err)
	}
	name, err := pki.PeerName(tc.ConnectionState())
	if err != nil {
		return nil, "", err
	}
	return tc, name, nil
}

// Remote reports whether a is a TCP address off this machine (not
// loopback). In-memory addresses are never remote.
func Remote(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && !ta.IP.IsLoopback()
}
