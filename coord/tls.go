package coord

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"spate/pki"
	"spate/wire"
)

// TLS on the links (wire/SPEC.md, "Joining the coordinator" and "TLS"):
// the run is TLS when --tls asks for it or when the coordinator listens
// off loopback (then a node may join from another host). It is decided
// once, at the start, for every link of the run: the coordinator makes the
// run's CA (kept in the run directory), its own certificate, and certifies
// each node as it joins.

// tlsState is the coordinator's TLS: nil fields without TLS.
type tlsState struct {
	ca *pki.CA
	id *pki.Identity
}

// wantTLS is the pure decision: --tls, or a listener whose address is off
// loopback.
func wantTLS(flag bool, ln net.Addr) bool { return flag || wire.Remote(ln) }

// setupTLS makes the run's CA and the coordinator's certificate when the
// run is TLS.
func (c *Coordinator) setupTLS(ln net.Listener) error {
	if !wantTLS(c.cfg.TLS || c.resumed && c.info.TLS, ln.Addr()) {
		return nil
	}
	now := c.opt.Now()
	var ca *pki.CA
	var err error
	if c.resumed && c.info.TLS { // the nodes know the run's CA, not a new one
		if ca, err = pki.LoadCA(c.dir); err != nil {
			return fmt.Errorf("run directory: %w", err)
		}
	} else {
		if ca, err = pki.NewCA(rand.Reader, c.run, now); err != nil {
			return err
		}
		if err := ca.Save(c.dir); err != nil {
			return fmt.Errorf("run directory: %w", err)
		}
	}
	id, err := ca.Identity(rand.Reader, pki.CoordName, now)
	if err != nil {
		return err
	}
	c.tls = tlsState{ca: ca, id: id}
	c.info.TLS = true
	return nil
}

// tlsOn says whether the run's links are TLS.
func (c *Coordinator) tlsOn() bool { return c.tls.ca != nil }

// joinCheck is the coordinator's check of a node's hello, before the
// challenge: its role, and, without TLS, that it comes from this machine.
func (c *Coordinator) joinCheck(remote net.Addr) func(wire.Hello) error {
	return func(h wire.Hello) error {
		if h.Role != wire.RoleNode {
			return fmt.Errorf("role %q: only nodes connect here", h.Role)
		}
		if !c.tlsOn() && wire.Remote(remote) {
			return fmt.Errorf("a join from another host (%s) needs TLS: start spate up with --tls, or --listen off loopback", remote)
		}
		return nil
	}
}

// upgrade runs TLS on a joined node's connection: the node's certificate
// must be exactly the one just issued to it (cert).
func (c *Coordinator) upgrade(conn net.Conn, name string, cert []byte) (net.Conn, error) {
	tc, got, err := wire.TLSServer(conn, c.tls.id.ServerConfig(), 10*time.Second)
	if err != nil {
		return nil, err
	}
	if peer := tc.ConnectionState().PeerCertificates[0]; got != name || !bytes.Equal(peer.Raw, cert) {
		tc.Close()
		return nil, fmt.Errorf("%w: the node presented %q's certificate, not the one issued to it as %s", pki.ErrBadCertificate, got, name)
	}
	return tc, nil
}

// caFile is where the run's CA certificate is, for the run's messages.
func (c *Coordinator) caFile() string { return filepath.Join(c.dir, pki.CertFile) }

// caDER is the CA certificate a joining node gets (nil without TLS).
func (c *Coordinator) caDER() []byte {
	if c.tls.ca == nil {
		return nil
	}
	return c.tls.ca.DER
}

// certify signs a joining node's certificate request for name.
func (c *Coordinator) certify(csr []byte, name string) ([]byte, error) {
	return c.tls.ca.Sign(rand.Reader, csr, name, c.opt.Now())
}
