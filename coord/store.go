package coord

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/yamux"

	"spate/events"
	"spate/state"
	"spate/stores"
	"spate/traces"
	"spate/wire"
)

// The run's stores (--store): where the checkpoints and the sinks'
// output go, and the coordinator's side of the coordinator store, which
// answers the store streams nodes open on their sessions (wire/SPEC.md,
// "Store streams"). The coordinator's own record (checkpoints/MANIFEST.json,
// run.json) stays in the run directory whatever the store. The input
// file of a trace: or rate: source is served read-only too (SpaceInput).

// openStores opens the checkpoint store (c.store: Options.Store if set)
// and the output store (c.outStore) that cfg.Store names, and the server
// of both for the nodes.
func (c *Coordinator) openStores() error {
	sp, err := stores.Parse(c.cfg.Store)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	c.storeSpec = sp
	c.store = c.opt.Store
	if sp.Kind == stores.S3 {
		if c.store == nil {
			if c.store, err = stores.OpenS3(sp, c.run+"/checkpoints", stores.S3Options{}); err != nil {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
		}
		if c.outStore, err = stores.OpenS3(sp, c.run+"/output", stores.S3Options{}); err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
	} else {
		if c.store == nil {
			if c.store, err = state.NewDirStore(filepath.Join(c.dir, "checkpoints")); err != nil {
				return fmt.Errorf("checkpoint store: %w", err)
			}
		}
		if c.outStore, err = state.NewDirStore(filepath.Join(c.dir, "output")); err != nil {
			return fmt.Errorf("output store: %w", err)
		}
	}
	spaces := map[wire.StoreSpace]state.Store{wire.SpaceCheckpoints: c.store, wire.SpaceOutput: c.outStore}
	if file, ok := traces.InputFile(c.cfg.Source); ok {
		// A node on another host reads the trace the oracle reads: this
		// one, fetched through its session (node/store.go).
		abs, err := filepath.Abs(file)
		if err != nil {
			return fmt.Errorf("--source %s: %w", c.cfg.Source, err)
		}
		spaces[wire.SpaceInput] = stores.NewFiles(map[string]string{wire.InputSource: abs})
	}
	c.storeSrv = stores.NewServer(spaces, 0)
	return nil
}

// recordStoreTraffic puts what the coordinator store's streams carried
// into run.json's store_traffic.
func (c *Coordinator) recordStoreTraffic() {
	if c.storeSrv == nil {
		return
	}
	if t := c.storeSrv.Traffic(); t != (stores.Traffic{}) {
		c.info.StoreTraffic = &t
	}
}

// serveStores answers the store streams node opens on its session after
// its control stream, each on its own goroutine, until the session ends.
// The session is the one the node's hello authenticated.
func (c *Coordinator) serveStores(node string, sess *yamux.Session) {
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return
		}
		go func() {
			if err := c.storeSrv.Serve(st); err != nil {
				c.publish(events.Error, node, "", events.ErrorFields{Peer: node}, "store stream from %s: %v", node, err)
			}
		}()
	}
}

// OpenOutput opens the output store of the finished or running run in
// dir: output/ of the run directory, or the object store run.json names.
func OpenOutput(dir string) (state.Store, error) {
	ri, err := ReadRunInfo(dir)
	if err != nil {
		return nil, err
	}
	sp, err := stores.Parse(ri.Config.Store)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "run.json"), err)
	}
	if sp.Kind == stores.S3 {
		return stores.OpenS3(sp, ri.Run+"/output", stores.S3Options{})
	}
	return state.NewDirStore(filepath.Join(dir, "output"))
}

// outputWhere says where the run's output is, for messages.
func (c *core) outputWhere() string {
	if c.storeSpec.Kind == stores.S3 {
		return c.storeSpec.String() + " (run " + c.run + "/output)"
	}
	return filepath.Join(c.dir, "output")
}
