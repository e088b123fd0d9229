package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// Errors of the package, returned wrapped with what was wrong.
var (
	// ErrBadProof: a join proof does not match (a wrong token on one side,
	// an answer replayed from another join, a CA or request swapped on
	// the way).
	ErrBadProof = errors.New("bad token")
	// ErrBadCertificate: a certificate request or a certificate that does
	// not fit (unparsable, badly signed, of another run, of another name).
	ErrBadCertificate = errors.New("bad certificate")
)

// CoordName is the name in the coordinator's own certificate.
const CoordName = "spate-coordinator"

// Files of the CA in a run directory.
const (
	CertFile = "ca.crt"
	KeyFile  = "ca.key"
)

// validity of a CA and of everything it signs.
const validity = 365 * 24 * time.Hour

// CA is a run's certificate authority.
type CA struct {
	Cert *x509.Certificate
	DER  []byte // Cert's bytes: what a joining node receives
	key  *ecdsa.PrivateKey
}

// NewCA makes a fresh CA for run.
func NewCA(rand io.Reader, run string, now time.Time) (*CA, error) {
	key, err := NewKey(rand)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial(rand)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "spate run " + run + " CA", Organization: []string{"spate"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make the run CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("make the run CA: %w", err)
	}
	return &CA{Cert: cert, DER: der, key: key}, nil
}

// Fingerprint is the SHA-256 of the CA certificate's bytes.
func (ca *CA) Fingerprint() [32]byte { return sha256.Sum256(ca.DER) }

// Save writes ca.crt and ca.key (mode 0600) into dir.
func (ca *CA) Save(dir string) error {
	kb, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, KeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.DER}), 0o644)
}

// LoadCA reads the CA that Save wrote into dir.
func LoadCA(dir string) (*CA, error) {
	read := func(name, typ string) ([]byte, error) {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		blk, _ := pem.Decode(b)
		if blk == nil || blk.Type != typ {
			return nil, fmt.Errorf("%s: %w: no %s block", p, ErrBadCertificate, typ)
		}
		return blk.Bytes, nil
	}
	der, err := read(CertFile, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	kb, err := read(KeyFile, "EC PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", filepath.Join(dir, CertFile), ErrBadCertificate, err)
	}
	key, err := x509.ParseECPrivateKey(kb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", filepath.Join(dir, KeyFile), ErrBadCertificate, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s: %w: the key is not the certificate's", filepath.Join(dir, KeyFile), ErrBadCertificate)
	}
	return &CA{Cert: cert, DER: der, key: key}, nil
}

// NewKey makes a node's (or the coordinator's) private key.
func NewKey(rand io.Reader) (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand)
}

// CSR makes a certificate request for key. Its subject is empty: the
// coordinator names the node.
func CSR(rand io.Reader, key *ecdsa.PrivateKey) ([]byte, error) {
	return x509.CreateCertificateRequest(rand, &x509.CertificateRequest{}, key)
}

// Sign checks a certificate request (well formed, self-signed with an
// ECDSA P-256 key) and issues a certificate for name on its key.
func (ca *CA) Sign(rand io.Reader, csrDER []byte, name string, now time.Time) ([]byte, error) {
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate request: %v", ErrBadCertificate, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: certificate request: %v", ErrBadCertificate, err)
	}
	pub, ok := csr.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%w: certificate request: want an ECDSA P-256 key", ErrBadCertificate)
	}
	return ca.issue(rand, pub, name, now)
}

func (ca *CA) issue(rand io.Reader, pub *ecdsa.PublicKey, name string, now time.Time) ([]byte, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: no name to certify", ErrBadCertificate)
	}
	serial, err := newSerial(rand)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"spate"}},
		DNSNames:     []string{name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     ca.Cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("certify %s: %w", name, err)
	}
	return der, nil
}

// Identity makes a key and a certificate for name, signed by the CA (the
// coordinator's own identity).
func (ca *CA) Identity(rand io.Reader, name string, now time.Time) (*Identity, error) {
	key, err := NewKey(rand)
	if err != nil {
		return nil, err
	}
	der, err := ca.issue(rand, &key.PublicKey, name, now)
	if err != nil {
		return nil, err
	}
	return NewIdentity(name, key, der, ca.DER, now)
}

// Identity is one process's side of TLS: its certificate and key, and the
// run's CA that every peer's certificate must chain to.
type Identity struct {
	Name string
	cert tls.Certificate
	pool *x509.CertPool
	ca   []byte
}

// NewIdentity checks that certDER is a certificate for name on key, issued
// by caDER and valid at now, and returns the identity. A node calls it
// with what the coordinator's welcome carried.
func NewIdentity(name string, key *ecdsa.PrivateKey, certDER, caDER []byte, now time.Time) (*Identity, error) {
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("%w: the run CA: %v", ErrBadCertificate, err)
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCertificate, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%w: the certificate is not for our key", ErrBadCertificate)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCertificate, err)
	}
	return &Identity{Name: name, pool: pool, ca: caDER,
		cert: tls.Certificate{Certificate: [][]byte{certDER}, PrivateKey: key, Leaf: cert}}, nil
}

// ClientConfig is the TLS configuration of a dialer that expects peer:
// TLS 1.3, our certificate, and the peer's certificate chaining to the
// run's CA and naming peer.
func (id *Identity) ClientConfig(peer string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.cert},
		RootCAs: id.pool, ServerName: peer}
}

// ServerConfig is the TLS configuration of a listener: TLS 1.3, our
// certificate, and a client certificate required, chaining to the run's
// CA (PeerName then says whose it is).
func (id *Identity) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.cert},
		ClientCAs: id.pool, ClientAuth: tls.RequireAndVerifyClientCert}
}

// PeerName is the name in the verified certificate of a TLS connection's
// peer.
func PeerName(cs tls.ConnectionState) (string, error) {
	if !cs.HandshakeComplete || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return "", fmt.Errorf("%w: none verified", ErrBadCertificate)
	}
	leaf := cs.PeerCertificates[0]
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != leaf.Subject.CommonName {
		return "", fmt.Errorf("%w: it names %v, want one node", ErrBadCertificate, leaf.DNSNames)
	}
	return leaf.DNSNames[0], nil
}

func newSerial(rand io.Reader) (*big.Int, error) {
	return crandInt(rand, new(big.Int).Lsh(big.NewInt(1), 127))
}

// writeFile writes data to path atomically (a temporary name, fsync,
// rename) with perm.
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm) // whatever the umask said
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
