package node

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"spate/events"
	"spate/internal/human"

	"spate/state"
	"spate/stores"
	"spate/traces"
	"spate/wire"
)

// Where this node's checkpoints and sink output go (Deploy.Store, `spate
// up --store`): the run directory when the node can see it (the default
// for every node that can, which is every node the coordinator spawned),
// the coordinator over this node's own session when it cannot (a node
// that joined from another host), or an object store. A sink writing
// through a store keeps its output as immutable segments (stores.Log), so
// that no store needs append or rename.

// syncWriter is a sink's output: a file of the run directory, or a
// segmented log in a store. Sync makes everything written so far durable.
type syncWriter interface {
	io.Writer
	Sync() error
}

// seesRunDir reports whether dir is this run's directory as this node
// sees it: it holds the run's token file with this node's token.
func seesRunDir(dir, token string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "token"))
	return err == nil && wire.TokenEqual(strings.TrimSpace(string(b)), token)
}

// openStores returns the node's checkpoint store (Config.Store wins when
// set), its output store (nil: the sinks write files in the run
// directory's output/), and whether the run directory is hidden from it.
func (n *Node) openStores(d *wire.Deploy) (ckpt, out state.Store, hidden bool, err error) {
	sp, err := stores.Parse(d.Store)
	if err != nil {
		return nil, nil, false, err
	}
	hidden = !seesRunDir(d.DataDir, n.cfg.Token)
	kind, why := sp.Kind, "--store "+string(sp.Kind)
	if kind == stores.Auto || kind == stores.Dir {
		switch {
		case !hidden:
			kind, why = stores.Dir, "the run directory is visible here"
		case kind == stores.Dir:
			return nil, nil, hidden, fmt.Errorf("--store dir: node %s cannot see the run directory %s (no token file of this run there: another host?); use --store coord or --store s3://BUCKET/PREFIX?endpoint=HOST:PORT", n.nodeName(), d.DataDir)
		default:
			kind, why = stores.Coord, "the run directory "+d.DataDir+" is not visible here"
		}
	}
	ckpt = n.cfg.Store
	switch kind {
	case stores.Dir:
		if ckpt == nil {
			if ckpt, err = state.NewDirStore(filepath.Join(d.DataDir, "checkpoints")); err != nil {
				return nil, nil, hidden, fmt.Errorf("checkpoint store: %w", err)
			}
		}
	case stores.Coord:
		if n.coordSess == nil {
			return nil, nil, hidden, fmt.Errorf("checkpoint store: the coordinator store needs a coordinator session")
		}
		open := n.openCoordStream
		if ckpt == nil {
			ckpt = stores.NewClient(open, wire.SpaceCheckpoints, 0)
		}
		out = stores.NewClient(open, wire.SpaceOutput, 0)
	case stores.S3:
		if ckpt == nil {
			if ckpt, err = stores.OpenS3(sp, d.Run+"/checkpoints", stores.S3Options{}); err != nil {
				return nil, nil, hidden, err
			}
		}
		if out, err = stores.OpenS3(sp, d.Run+"/output", stores.S3Options{}); err != nil {
			return nil, nil, hidden, err
		}
	}
	n.log.Printf("node %s: checkpoints and output in %s (%s)", n.nodeName(), storeWhere(kind, sp), why)
	if kind != stores.Dir {
		tr := &trafficReport{kind: kind}
		for _, s := range []state.Store{ckpt, out} {
			if m, ok := s.(stores.Metered); ok {
				tr.meters = append(tr.meters, m)
			}
		}
		n.traffic.Store(tr)
	}
	return ckpt, out, hidden, nil
}

// trafficEvery is how often at most a node reports its stores' traffic
// while it grows.
const trafficEvery = 500 * time.Millisecond

// trafficReport is what the node's stores moved over the network
// (stores.Metered), for the store_traffic events. It is safe for
// concurrent use.
type trafficReport struct {
	kind   stores.Kind
	meters []stores.Metered
	mu     sync.Mutex
	last   stores.Traffic // the last reported
	at     time.Time      // when
}

// due returns the stores' traffic so far and whether to report it now:
// it grew since the last report, and that was trafficEvery ago or force.
func (t *trafficReport) due(now time.Time, force bool) (stores.Traffic, bool) {
	var sum stores.Traffic
	for _, m := range t.meters {
		sum = sum.Add(m.Traffic())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sum == t.last || (!force && now.Sub(t.at) < trafficEvery) {
		return sum, false
	}
	t.last, t.at = sum, now
	return sum, true
}

// reportTraffic sends a store_traffic event if the stores' traffic is
// due (trafficReport.due). Two reports racing may arrive out of order:
// the counts are cumulative, the higher is the later.
func (n *Node) reportTraffic(force bool) {
	tr := n.traffic.Load()
	if tr == nil {
		return
	}
	t, ok := tr.due(time.Now(), force)
	if !ok {
		return
	}
	n.event(events.StoreTraffic, "", events.StoreTrafficFields{Store: string(tr.kind), ToStore: t.ToStore, FromStore: t.FromStore},
		"store traffic so far (%s): %s sent, %s received", tr.kind, human.Bytes(float64(t.ToStore)), human.Bytes(float64(t.FromStore)))
}

// localDirFor is the directory of its own a node that cannot see the run
// directory keeps under the system's temporary directory: its spilled
// backups and its copy of the run's input. The node removes it when it
// exits (Run); a node killed by a signal leaves it behind.
func localDirFor(d *wire.Deploy, node string) string {
	return filepath.Join(os.TempDir(), "spate-"+d.Run+"-"+node)
}

// openCoordStream opens a store stream on the coordinator session.
func (n *Node) openCoordStream() (net.Conn, error) {
	n.mu.Lock()
	sess := n.coordSess // a new one after a rejoin
	n.mu.Unlock()
	if sess == nil {
		return nil, errNoCoordinator
	}
	return sess.Open()
}

// spillDirFor is where a node's upstream backups spill past their memory
// limit: the run directory's spill/ when the node sees it (""), else
// spill/ of its local directory.
func spillDirFor(d *wire.Deploy, node string, hidden bool) string {
	if !hidden {
		return ""
	}
	return filepath.Join(localDirFor(d, node), "spill")
}

// fetchInput copies the run's input file (a trace: or rate: source) from
// the coordinator (wire.SpaceInput) into dir and returns the source spec
// that reads the copy: a node that cannot see the coordinator's files
// reads the bytes the coordinator and the oracle read, not a file of the
// same name on its own host. A spec that reads no file is returned as it
// is. The copy is checked end to end (CRC-32C) on the way.
func fetchInput(open func() (net.Conn, error), spec, dir string) (string, error) {
	file, ok := traces.InputFile(spec)
	if !ok {
		return spec, nil
	}
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("fetch the input %s from the coordinator: %w", file, err)
	}
	r, err := stores.NewClient(open, wire.SpaceInput, 0).Open(wire.InputSource)
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	f, err := os.CreateTemp(dir, ".input-")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(f.Name())
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	local := filepath.Join(dir, filepath.Base(file))
	if err := os.Rename(f.Name(), local); err != nil {
		return fail(err)
	}
	return traces.WithInputFile(spec, local), nil
}

func storeWhere(k stores.Kind, sp stores.Spec) string {
	switch k {
	case stores.Dir:
		return "the run directory"
	case stores.Coord:
		return "the coordinator"
	}
	return sp.String()
}

// openSinkOutput opens the output of sink placement p, name relative to
// output/: a new file (truncated: a generation writes its own), or a new
// segmented log in the node's output store.
func openSinkOutput(n *Node, d *wire.Deploy, name string) (syncWriter, error) {
	if n.out != nil {
		return stores.NewLog(n.out, name), nil
	}
	dir := filepath.Join(d.DataDir, "output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
}
