package stores

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"spate/state"
	"spate/wire"
)

// DefaultTimeout is the idle timeout of a store request: how long either
// end waits for the other's next bytes.
const DefaultTimeout = 30 * time.Second

// MaxPut bounds one file put through the coordinator.
const MaxPut = 1 << 30

// idle makes every Read and Write of c wait at most d for progress: a
// rolling deadline, so that a large transfer that moves is never cut, and
// a silent peer is.
type idle struct {
	net.Conn
	d time.Duration
}

func (c idle) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.d))
	return c.Conn.Read(p)
}

func (c idle) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.d))
	return c.Conn.Write(p)
}

// Client is a state.Store whose files the coordinator keeps: each call is
// one request on a fresh stream of the node's coordinator session. It is
// safe for concurrent use.
type Client struct {
	open    func() (net.Conn, error)
	space   wire.StoreSpace
	timeout time.Duration
	m       meter
}

// NewClient returns a Client of the coordinator's space (checkpoints or
// output); open opens a stream to the coordinator (yamux.Session.Open).
// timeout <= 0 means DefaultTimeout.
func NewClient(open func() (net.Conn, error), space wire.StoreSpace, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{open: open, space: space, timeout: timeout}
}

// call opens a stream and sends req (and, for a put, content). The caller
// reads the reply and closes the stream.
func (c *Client) call(req wire.StoreRequest, content [][]byte) (net.Conn, *wire.Reader, error) {
	st, err := c.open()
	if err != nil {
		return nil, nil, fmt.Errorf("open a store stream to the coordinator: %w", err)
	}
	conn := idle{Conn: countedConn{Conn: st, rd: &c.m.from, wr: &c.m.to}, d: c.timeout}
	w := wire.NewWriter(conn)
	err = w.WriteJSON(wire.TStore, req)
	if err == nil && req.Op == wire.StorePut {
		_, err = w.WriteContent(content...)
	} else if err == nil {
		err = w.Flush()
	}
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, wire.NewReader(conn, 0), nil
}

// Traffic implements Metered: every byte this client's requests wrote
// to their streams and read back.
func (c *Client) Traffic() Traffic { return c.m.traffic() }

// reply reads a store-reply and turns its status into an error.
func reply(r *wire.Reader) (wire.StoreReply, error) {
	var rep wire.StoreReply
	t, p, err := r.ReadFrame()
	if err != nil {
		return rep, fmt.Errorf("the coordinator's reply: %w", err)
	}
	if t != wire.TStoreReply {
		return rep, fmt.Errorf("the coordinator's reply: a %v frame, want store-reply", t)
	}
	if err := wire.DecodeJSON(t, p, &rep); err != nil {
		return rep, err
	}
	switch rep.Status {
	case wire.StoreOK:
		return rep, nil
	case wire.StoreNotFound:
		return rep, state.ErrNotFound
	case wire.StoreBadName:
		return rep, fmt.Errorf("%w: %s", state.ErrBadName, rep.Error)
	case wire.StoreCorrupt:
		return rep, fmt.Errorf("%w: %s", state.ErrCorrupt, rep.Error)
	default:
		return rep, fmt.Errorf("the coordinator: %s", rep.Error)
	}
}

func (c *Client) errf(op, name string, err error) error {
	if errors.Is(err, wire.ErrChecksum) {
		err = fmt.Errorf("%w: %w", state.ErrCorrupt, err)
	}
	return fmt.Errorf("stores: coordinator %s: %s %s: %w", c.space, op, name, err)
}

// Put implements state.Store.
func (c *Client) Put(name string, data ...[]byte) error {
	if err := state.CheckName(name); err != nil {
		return err
	}
	st, r, err := c.call(wire.StoreRequest{Op: wire.StorePut, Space: c.space, Name: name}, data)
	if err != nil {
		return c.errf("put", name, err)
	}
	defer st.Close()
	if _, err := reply(r); err != nil {
		return c.errf("put", name, err)
	}
	return nil
}

// Get implements state.Store.
func (c *Client) Get(name string) ([]byte, error) {
	rc, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Open implements state.Store: the content streams in as it is read, and
// its CRC-32C is checked at the end (the last Read fails, wrapping
// state.ErrCorrupt, if it does not match).
func (c *Client) Open(name string) (io.ReadCloser, error) {
	if err := state.CheckName(name); err != nil {
		return nil, err
	}
	st, r, err := c.call(wire.StoreRequest{Op: wire.StoreGet, Space: c.space, Name: name}, nil)
	if err != nil {
		return nil, c.errf("get", name, err)
	}
	if _, err := reply(r); err != nil {
		st.Close()
		return nil, c.errf("get", name, err)
	}
	return &contentReader{st: st, r: r, name: name, c: c}, nil
}

// contentReader reads store-data frames up to the store-end frame.
type contentReader struct {
	st   net.Conn
	r    *wire.Reader
	c    *Client
	name string
	cur  []byte
	crc  uint32
	n    uint64
	err  error
}

func (cr *contentReader) Read(p []byte) (int, error) {
	for len(cr.cur) == 0 {
		if cr.err != nil {
			return 0, cr.err
		}
		t, b, err := cr.r.ReadFrame()
		switch {
		case err != nil:
			cr.err = cr.c.errf("get", cr.name, err)
		case t == wire.TStoreData:
			cr.cur = b // valid until the next ReadFrame, which only an empty cur calls
			cr.crc = wire.CRC32C(cr.crc, b)
			cr.n += uint64(len(b))
		case t == wire.TStoreEnd:
			crc, n, err := wire.DecodeStoreEnd(b)
			switch {
			case err != nil:
				cr.err = cr.c.errf("get", cr.name, err)
			case crc != cr.crc || n != cr.n:
				cr.err = cr.c.errf("get", cr.name, fmt.Errorf("%w: %d bytes with CRC-32C %08x arrived, the coordinator sent %d bytes with %08x", wire.ErrChecksum, cr.n, cr.crc, n, crc))
			default:
				cr.err = io.EOF
			}
		default:
			cr.err = cr.c.errf("get", cr.name, fmt.Errorf("a %v frame in content", t))
		}
	}
	k := copy(p, cr.cur)
	cr.cur = cr.cur[k:]
	return k, nil
}

func (cr *contentReader) Close() error { return cr.st.Close() }

// List implements state.Store.
func (c *Client) List(prefix string) ([]string, error) {
	st, r, err := c.call(wire.StoreRequest{Op: wire.StoreList, Space: c.space, Prefix: prefix}, nil)
	if err != nil {
		return nil, c.errf("list", fmt.Sprintf("%q", prefix), err)
	}
	defer st.Close()
	rep, err := reply(r)
	if err != nil {
		return nil, c.errf("list", fmt.Sprintf("%q", prefix), err)
	}
	return rep.Names, nil
}

// Delete implements state.Store.
func (c *Client) Delete(name string) error { return c.ask(wire.StoreDelete, name) }

// ask sends a request about one name whose reply carries nothing but
// its status (delete, verify).
func (c *Client) ask(op wire.StoreOp, name string) error {
	if err := state.CheckName(name); err != nil {
		return err
	}
	st, r, err := c.call(wire.StoreRequest{Op: op, Space: c.space, Name: name}, nil)
	if err != nil {
		return c.errf(string(op), name, err)
	}
	defer st.Close()
	if _, err := reply(r); err != nil {
		return c.errf(string(op), name, err)
	}
	return nil
}

// Verify checks checkpoint file name where it lies (state.VerifyReader
// in the coordinator), so that a scrub does not bring the file over the
// network: nil, state.ErrNotFound, or an error wrapping state.ErrCorrupt.
func (c *Client) Verify(name string) error { return c.ask(wire.StoreVerify, name) }

// Server answers store streams with the coordinator's stores, one per
// space. It is safe for concurrent use: every stream is served on its own.
type Server struct {
	spaces   map[wire.StoreSpace]state.Store
	timeout  time.Duration
	mu       sync.Mutex
	bytesIn  int64
	bytesOut int64
	m        meter
}

// NewServer returns a Server of spaces; timeout <= 0 means DefaultTimeout.
func NewServer(spaces map[wire.StoreSpace]state.Store, timeout time.Duration) *Server {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Server{spaces: spaces, timeout: timeout}
}

// Bytes returns the content bytes the server has taken in (puts) and
// sent out (gets) so far: what crossed the network for the store.
func (s *Server) Bytes() (in, out int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytesIn, s.bytesOut
}

// Traffic implements Metered: every byte of the store streams the server
// has read (ToStore: the nodes' requests and puts) and written
// (FromStore: replies and gets) so far, whichever space they were of.
func (s *Server) Traffic() Traffic { return s.m.traffic() }

// Serve answers the one request of store stream st, then closes it. The
// error is a protocol error of the peer (a frame out of place, content
// damaged on the way), for the caller to report; a request the store
// refuses (a missing name, a failing disk) is answered, not returned.
func (s *Server) Serve(st net.Conn) error {
	defer st.Close()
	conn := idle{Conn: countedConn{Conn: st, rd: &s.m.to, wr: &s.m.from}, d: s.timeout}
	r, w := wire.NewReader(conn, 0), wire.NewWriter(conn)
	t, p, err := r.ReadFrame()
	if err != nil {
		return fmt.Errorf("store stream: %w", err)
	}
	if t != wire.TStore {
		return fmt.Errorf("store stream: a %v frame, want store", t)
	}
	var req wire.StoreRequest
	if err := wire.DecodeJSON(t, p, &req); err != nil {
		return fmt.Errorf("store stream: %w", err)
	}
	answer := func(rep wire.StoreReply) error {
		if err := w.WriteJSON(wire.TStoreReply, rep); err != nil {
			return err
		}
		return w.Flush()
	}
	store := s.spaces[req.Space]
	if store == nil {
		return errors.Join(fmt.Errorf("store stream: unknown space %q", req.Space),
			answer(wire.StoreReply{Status: wire.StoreFailed, Error: fmt.Sprintf("unknown space %q", req.Space)}))
	}
	switch req.Op {
	case wire.StorePut:
		if err := state.CheckName(req.Name); err != nil {
			return answer(failure(err))
		}
		var parts [][]byte
		var n int64
		err := r.ReadContent(MaxPut, func(b []byte) error {
			parts = append(parts, slices.Clone(b))
			n += int64(len(b))
			return nil
		})
		if err != nil {
			status := wire.StoreFailed
			if errors.Is(err, wire.ErrChecksum) {
				status = wire.StoreCorrupt
			}
			return errors.Join(fmt.Errorf("store put %s: %w", req.Name, err),
				answer(wire.StoreReply{Status: status, Error: err.Error()}))
		}
		s.count(n, 0)
		if err := store.Put(req.Name, parts...); err != nil {
			return answer(failure(err))
		}
		return answer(wire.StoreReply{Status: wire.StoreOK})
	case wire.StoreGet:
		f, err := store.Open(req.Name)
		if err != nil {
			return answer(failure(err))
		}
		defer f.Close()
		if err := answer(wire.StoreReply{Status: wire.StoreOK}); err != nil {
			return err
		}
		// Streamed: a checkpoint is read once, never held whole here.
		buf := make([]byte, wire.StoreChunk)
		var crc uint32
		var total uint64
		for {
			k, rerr := io.ReadFull(f, buf)
			if k > 0 {
				crc = wire.CRC32C(crc, buf[:k])
				total += uint64(k)
				if err := w.WriteFrame(wire.TStoreData, buf[:k]); err != nil {
					return err
				}
			}
			if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
				break
			}
			if rerr != nil {
				return nil // the stream ends without store-end: the node sees a cut transfer
			}
		}
		s.count(0, int64(total))
		if err := w.WriteFrame(wire.TStoreEnd, wire.EncodeStoreEnd(crc, total)); err != nil {
			return err
		}
		return w.Flush()
	case wire.StoreList:
		names, err := store.List(req.Prefix)
		if err != nil {
			return answer(failure(err))
		}
		return answer(wire.StoreReply{Status: wire.StoreOK, Names: names})
	case wire.StoreDelete:
		if err := store.Delete(req.Name); err != nil {
			return answer(failure(err))
		}
		return answer(wire.StoreReply{Status: wire.StoreOK})
	case wire.StoreVerify:
		f, err := store.Open(req.Name)
		if err != nil {
			return answer(failure(err))
		}
		_, err = state.VerifyReader(f, make([]byte, wire.StoreChunk))
		f.Close()
		if err != nil {
			if !errors.Is(err, state.ErrCorrupt) {
				err = fmt.Errorf("%w: %w", state.ErrCorrupt, err)
			}
			return answer(failure(err))
		}
		return answer(wire.StoreReply{Status: wire.StoreOK})
	default:
		return errors.Join(fmt.Errorf("store stream: unknown op %q", req.Op),
			answer(wire.StoreReply{Status: wire.StoreFailed, Error: fmt.Sprintf("unknown op %q", req.Op)}))
	}
}

func (s *Server) count(in, out int64) {
	s.mu.Lock()
	s.bytesIn += in
	s.bytesOut += out
	s.mu.Unlock()
}

// failure is the reply for a store's error.
func failure(err error) wire.StoreReply {
	switch {
	case errors.Is(err, state.ErrNotFound):
		return wire.StoreReply{Status: wire.StoreNotFound}
	case errors.Is(err, state.ErrBadName):
		return wire.StoreReply{Status: wire.StoreBadName, Error: err.Error()}
	case errors.Is(err, state.ErrCorrupt):
		return wire.StoreReply{Status: wire.StoreCorrupt, Error: err.Error()}
	}
	return wire.StoreReply{Status: wire.StoreFailed, Error: err.Error()}
}
