package stores

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
)

// Traffic is what crossed the network for a store, in bytes: ToStore
// went from the store's user (a node) to the store, FromStore came back.
// For the coordinator store it is every byte of the store streams
// (requests, content frames, replies; not yamux's frame headers nor
// TLS's records); for an object store, the bodies of the HTTP requests
// and responses (object PUTs and GETs, and the XML of listings and
// errors; not the headers). A directory store has none.
type Traffic struct {
	FromStore int64 `json:"from_store"`
	ToStore   int64 `json:"to_store"`
}

// Add returns t plus u.
func (t Traffic) Add(u Traffic) Traffic {
	return Traffic{FromStore: t.FromStore + u.FromStore, ToStore: t.ToStore + u.ToStore}
}

// Metered is a store that counts its Traffic (Client, Server,
// ObjectStore). Traffic is safe to call concurrently with the store's
// requests.
type Metered interface {
	Traffic() Traffic
}

// meter holds the two counters of a Traffic.
type meter struct{ from, to atomic.Int64 }

func (m *meter) traffic() Traffic { return Traffic{FromStore: m.from.Load(), ToStore: m.to.Load()} }

// countedConn counts what is read from and written to a connection into
// a meter: read counts as rd, written as wr (the client's reads come
// from the store, the server's go to it).
type countedConn struct {
	net.Conn
	rd, wr *atomic.Int64
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.rd.Add(int64(n))
	return n, err
}

func (c countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.wr.Add(int64(n))
	return n, err
}

// meteredTransport counts the bodies of the requests it carries (as the
// transport reads them: a retried request counts each time it is sent)
// and of their responses (as the caller reads them).
type meteredTransport struct {
	base http.RoundTripper
	m    *meter
}

func (t meteredTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		r := req.Clone(req.Context())
		r.Body = countedBody{ReadCloser: req.Body, n: &t.m.to}
		req = r
	}
	resp, err := t.base.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = countedBody{ReadCloser: resp.Body, n: &t.m.from}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countedBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}
