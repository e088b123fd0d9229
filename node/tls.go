package node

import (
	"crypto/ecdsa"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"time"

	"spate/pki"
	"spate/wire"
)

// join runs the join on conn (wire/SPEC.md, "Joining the coordinator"):
// the token challenge, and with TLS (the coordinator decides), this
// node's certificate and the TLS handshake. It returns the welcome and the
// connection to go on with (conn itself, or TLS over it), and sets n.id.
// It runs before n.joined is closed: nothing else reads n.id yet.
func (n *Node) join(conn net.Conn, listen string) (wire.Welcome, net.Conn, error) {
	var key *ecdsa.PrivateKey
	csr := func() ([]byte, error) {
		var err error
		if key, err = pki.NewKey(rand.Reader); err != nil {
			return nil, err
		}
		return pki.CSR(rand.Reader, key)
	}
	j, err := wire.JoinClient(conn, wire.Hello{Role: wire.RoleNode, Node: n.nodeName(), PID: os.Getpid(), Listen: listen},
		n.cfg.Token, csr, 10*time.Second)
	if err != nil {
		return j.Welcome, conn, err
	}
	if !j.TLS {
		return j.Welcome, conn, nil
	}
	id, err := pki.NewIdentity(j.Node, key, j.Cert, j.CA, time.Now())
	if err != nil {
		return j.Welcome, conn, fmt.Errorf("join %s: the certificate the coordinator issued: %w", conn.RemoteAddr(), err)
	}
	tc, err := wire.TLSClient(conn, id.ClientConfig(pki.CoordName), 10*time.Second)
	if err != nil {
		return j.Welcome, conn, fmt.Errorf("join: %w", err)
	}
	if n.id == nil { // a rejoin keeps the first for the peer links: the CA is the run's
		n.id = id
	}
	return j.Welcome, tc, nil
}
