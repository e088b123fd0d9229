package control

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"spate/events"
)

// Action is one request to act on the cluster.
type Action struct {
	Verb   string            `json:"verb"`             // kill, restart, pause, resume, partition, link, store, heal, scale, interval, checkpoint
	Target string            `json:"target,omitempty"` // a node name, one, minority, majority, all, or an instance (count/1)
	Args   map[string]string `json:"args,omitempty"`   // verb-specific: shape, latency, jitter, for, n, interval, ...
}

// String is the action as a command line: "kill n2", "partition majority shape=bridge".
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(a.Verb)
	if a.Target != "" {
		b.WriteString(" " + a.Target)
	}
	keys := make([]string, 0, len(a.Args))
	for k := range a.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, a.Args[k])
	}
	return b.String()
}

// Result is what an action did.
type Result struct {
	OK    bool     `json:"ok"`
	Text  string   `json:"text"`            // one line for a human
	Nodes []string `json:"nodes,omitempty"` // the nodes it touched
}

// Status is a snapshot of the cluster.
type Status struct {
	Run       string     `json:"run"`
	Job       string     `json:"job"`
	FT        string     `json:"ft"`
	Break     string     `json:"break,omitempty"` // the protocol's broken variants on (spate up --break), comma separated
	Phase     string     `json:"phase"`           // joining, running, draining, finished
	Nodes     []Node     `json:"nodes"`
	Instances []Instance `json:"instances"`
	Faults    []Fault    `json:"faults,omitempty"`
	Seq       uint64     `json:"seq"` // the last event published
}

// Node is one worker process.
type Node struct {
	ID        string   `json:"id"`
	PID       int      `json:"pid"`
	State     string   `json:"state"` // alive, suspect, dead, paused, partitioned, exited
	Addr      string   `json:"addr,omitempty"`
	Instances []string `json:"instances,omitempty"`
}

// Instance is one operator instance.
type Instance struct {
	ID         string `json:"id"` // op/index, e.g. count/1
	Op         string `json:"op"`
	Node       string `json:"node"`
	Generation uint64 `json:"generation"`
	KeyGroups  []int  `json:"key_groups"`
	IntervalMs int64  `json:"interval_ms,omitempty"`
}

// Fault is an active fault.
type Fault struct {
	ID      int       `json:"id"`
	Action  Action    `json:"action"`
	Nodes   []string  `json:"nodes"`
	Started time.Time `json:"started"`
	Until   time.Time `json:"until,omitempty"` // zero: until healed
}

// Backend is what the server serves: the coordinator. Its methods are
// called from HTTP handler goroutines.
type Backend interface {
	Status(ctx context.Context) (Status, error)
	Act(ctx context.Context, a Action) (Result, error)
	// Events returns the retained events after seq and a live subscription
	// for the rest; cancel ends the subscription.
	Events(after uint64) (past []events.Event, live <-chan events.Event, cancel func())
}

// ErrUnauthorized is a request with a wrong or missing token.
var ErrUnauthorized = errors.New("control: wrong or missing token")

// Server serves a Backend over HTTP.
type Server struct {
	token string
	b     Backend
	srv   *http.Server
	ln    net.Listener
}

// Listen starts serving b on addr (use "127.0.0.1:0"). Addr tells where.
func Listen(addr, token string, b Backend) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control: listen %s: %w", addr, err)
	}
	s := &Server{token: token, b: b, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.status)
	mux.HandleFunc("POST /v1/act", s.act)
	mux.HandleFunc("GET /v1/events", s.events)
	s.srv = &http.Server{Handler: s.auth(mux), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and ends open event streams.
func (s *Server) Close() error { return s.srv.Close() }

func (s *Server) auth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			writeJSON(w, http.StatusUnauthorized, Result{Text: ErrUnauthorized.Error()})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.b.Status(r.Context())
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, Result{Text: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	var a Action
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		writeJSON(w, http.StatusBadRequest, Result{Text: "control: bad action: " + err.Error()})
		return
	}
	res, err := s.b.Act(r.Context(), a)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Result{Text: err.Error()})
		return
	}
	code := http.StatusOK
	if !res.OK {
		code = http.StatusBadRequest
	}
	writeJSON(w, code, res)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	var after uint64
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, Result{Text: "control: from: not a sequence number: " + v})
			return
		}
		after = n
	}
	past, live, cancel := s.b.Events(after)
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	last := after
	for _, e := range past {
		if err := enc.Encode(e); err != nil {
			return
		}
		last = e.Seq
	}
	if fl != nil {
		fl.Flush()
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-live:
			if !ok {
				return
			}
			if e.Seq <= last {
				continue
			}
			if err := enc.Encode(e); err != nil {
				return
			}
			last = e.Seq
			if fl != nil && len(live) == 0 {
				fl.Flush()
			}
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Client talks to a cluster's control API.
type Client struct {
	Base  string // http://127.0.0.1:PORT
	Token string
	HTTP  *http.Client
}

// AddrFile is the name of the file in the run directory that holds the
// control API's address.
const AddrFile = "control"

// Dial returns a client for the cluster whose run directory is dir.
func Dial(dir string) (*Client, error) {
	addr, err := os.ReadFile(filepath.Join(dir, AddrFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no running cluster (no %s file)", dir, AddrFile)
		}
		return nil, err
	}
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &Client{
		Base:  "http://" + strings.TrimSpace(string(addr)),
		Token: strings.TrimSpace(string(tok)),
		HTTP:  &http.Client{},
	}, nil
}

func (c *Client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", c.Base, err)
	}
	return resp, nil
}

// Status fetches a snapshot of the cluster.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	resp, err := c.do(ctx, http.MethodGet, "/v1/status", nil)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, errorOf(resp)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// Act asks the cluster to do a. A refused action is an error carrying the
// cluster's one-line reason.
func (c *Client) Act(ctx context.Context, a Action) (Result, error) {
	var res Result
	resp, err := c.do(ctx, http.MethodPost, "/v1/act", a)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return res, ErrUnauthorized
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, fmt.Errorf("control %s: %w", c.Base, err)
	}
	if !res.OK {
		return res, errors.New(res.Text)
	}
	return res, nil
}

// Events streams the cluster's events after seq to fn until ctx ends, the
// stream ends, or fn returns false.
func (c *Client) Events(ctx context.Context, after uint64, fn func(events.Event) bool) error {
	resp, err := c.do(ctx, http.MethodGet, "/v1/events?from="+strconv.FormatUint(after, 10), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errorOf(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("control %s: event stream: %w", c.Base, err)
		}
		if !fn(e) {
			return nil
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func errorOf(resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized {
		return ErrUnauthorized
	}
	var res Result
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&res); err == nil && res.Text != "" {
		return errors.New(res.Text)
	}
	return fmt.Errorf("control: %s", resp.Status)
}
