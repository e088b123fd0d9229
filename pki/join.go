package pki

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"math/big"
)

// NonceSize is the length of each nonce of a join.
const NonceSize = 32

// Labels that keep the two proofs of a join apart (and apart from any
// other use of the token).
const (
	coordLabel = "spate-join-coord-v1"
	nodeLabel  = "spate-join-node-v1"
)

// Challenge is what both ends of one join agree on before the node's
// proof: the node's nonce (from its hello), the coordinator's nonce, its
// TLS decision and, with TLS, its CA certificate.
type Challenge struct {
	NodeNonce  []byte
	CoordNonce []byte
	TLS        bool
	CA         []byte // the CA certificate's DER; empty without TLS
}

// NewNonce reads a fresh nonce from rand.
func NewNonce(rand io.Reader) ([]byte, error) {
	b := make([]byte, NonceSize)
	if _, err := io.ReadFull(rand, b); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return b, nil
}

func (ch Challenge) check() error {
	if len(ch.NodeNonce) != NonceSize || len(ch.CoordNonce) != NonceSize {
		return fmt.Errorf("%w: nonces of %d and %d bytes, want %d", ErrBadProof, len(ch.NodeNonce), len(ch.CoordNonce), NonceSize)
	}
	if ch.TLS != (len(ch.CA) > 0) {
		return fmt.Errorf("%w: tls %v with a CA of %d bytes", ErrBadProof, ch.TLS, len(ch.CA))
	}
	return nil
}

// mac is HMAC-SHA256 keyed by the token over the label and then each
// field as a u32be length and its bytes (wire/SPEC.md).
func mac(token, label string, fields ...[]byte) []byte {
	var h hash.Hash = hmac.New(sha256.New, []byte(token))
	h.Write([]byte(label))
	var n [4]byte
	for _, f := range fields {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return h.Sum(nil)
}

func (ch Challenge) fields() [][]byte {
	tls := []byte{0}
	if ch.TLS {
		tls[0] = 1
	}
	var fp []byte
	if ch.TLS {
		s := sha256.Sum256(ch.CA)
		fp = s[:]
	}
	return [][]byte{ch.NodeNonce, ch.CoordNonce, tls, fp}
}

// CoordProof is the coordinator's proof that it knows the token, over the
// challenge: it vouches for the TLS decision and the CA.
func CoordProof(token string, ch Challenge) ([]byte, error) {
	if err := ch.check(); err != nil {
		return nil, err
	}
	return mac(token, coordLabel, ch.fields()...), nil
}

// NodeProof is the node's proof that it knows the token, over the
// challenge and its certificate request (empty without TLS).
func NodeProof(token string, ch Challenge, csr []byte) ([]byte, error) {
	if err := ch.check(); err != nil {
		return nil, err
	}
	return mac(token, nodeLabel, append(ch.fields(), csr)...), nil
}

// CheckCoordProof is the node's check of the coordinator's proof. A
// mismatch means a wrong token on one side, or a coordinator (or a CA)
// that is not the run's.
func CheckCoordProof(token string, ch Challenge, proof []byte) error {
	want, err := CoordProof(token, ch)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, proof) {
		return fmt.Errorf("%w: the coordinator's proof does not match our token (a wrong --token, or not this run's coordinator or CA)", ErrBadProof)
	}
	return nil
}

// CheckNodeProof is the coordinator's check of a node's proof. A mismatch
// means a wrong token, an answer to another join's challenge (a replay),
// or a request swapped on the way.
func CheckNodeProof(token string, ch Challenge, csr, proof []byte) error {
	want, err := NodeProof(token, ch, csr)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, proof) {
		return fmt.Errorf("%w: the node's proof does not answer this challenge (a wrong token, or a replayed answer)", ErrBadProof)
	}
	return nil
}

func crandInt(r io.Reader, max *big.Int) (*big.Int, error) {
	if r == nil {
		r = rand.Reader
	}
	return rand.Int(r, max)
}
