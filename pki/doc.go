// Package pki is a run's certificate authority and the token challenge by
// which a node gets its certificate: what makes spate's links fit for a
// network that is not loopback (wire/SPEC.md, "Joining the coordinator"
// and "TLS").
//
// At `spate up` with TLS on, the coordinator makes a CA for the run
// (NewCA: ECDSA P-256, self-signed, its name carrying the run id) and keeps
// it in the run directory (Save: ca.crt, and ca.key with mode 0600;
// LoadCA reads them back). A node proves that it knows the cluster token
// without sending it: both ends compute HMAC-SHA256 with the token as the
// key over the join's two fresh nonces, the TLS decision, the CA's
// fingerprint and the node's certificate request (CoordProof, NodeProof;
// CheckCoordProof, CheckNodeProof compare in constant time). The
// coordinator's proof comes first, so a node never answers, nor trusts a
// CA, that a party without the token handed it. Then the CA signs the
// node's request (CA.Sign) with the name the coordinator gave it, and
// every later link is TLS 1.3, mutually authenticated with these
// certificates (Identity.ClientConfig, Identity.ServerConfig, PeerName).
//
// Contract:
//
//   - The token is a key here, never a message: no function of this
//     package returns it or anything from which it can be read back other
//     than by guessing (it is a random UUID: 122 bits).
//   - Nonces are exactly NonceSize bytes; a proof over anything else is
//     refused, never computed.
//   - A certificate the CA issues names exactly one node (its DNS name and
//     its common name), is good for client and server authentication, and
//     is valid while the CA is. PeerName returns that name from a verified
//     TLS connection state, and nothing from an unverified one.
//   - Errors are one line and wrap ErrBadProof (a proof that does not
//     match: a wrong token, a replayed answer, a rogue CA) or
//     ErrBadCertificate (a request or certificate that does not fit).
//
// The package is pure but for randomness, taken from the caller (an
// io.Reader; crypto/rand.Reader in the product), and time, taken as a
// value. Every function and method is safe for concurrent use; a CA and
// an Identity are not changed after they are made.
package pki
