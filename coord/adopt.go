package coord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"spate/netfault"
	"spate/traces"
)

// The driver's side of `spate up --resume DIR` (resume.go has the
// core's): read the run's configuration, token and durable record, take
// over the dead coordinator's local node processes, listen where the
// nodes look for their coordinator, and serve the run on.

// resumeUp resumes the run in flags.Resume.
func resumeUp(ctx context.Context, flags Config, opt Options) (string, error) {
	dir, err := filepath.Abs(flags.Resume)
	if err != nil {
		return flags.Resume, err
	}
	fail := func(format string, args ...any) (string, error) {
		return dir, fmt.Errorf("%w: --resume %s: %s", ErrUsage, dir, fmt.Sprintf(format, args...))
	}
	info, err := ReadRunInfo(dir)
	if err != nil {
		return fail("%v", err)
	}
	if info.Finished != nil {
		return fail("the run finished at %s: there is nothing to resume", info.Finished.Format(time.RFC3339))
	}
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return fail("the run's token: %v", err)
	}
	m, err := readManifestFile(dir)
	if err != nil {
		return fail("%v", err)
	}
	cfg := info.Config
	cfg.Headless, cfg.Events, cfg.Metrics, cfg.Script = flags.Headless, flags.Events, flags.Metrics, flags.Script
	if _, err := traces.Open(cfg.Source, cfg.SourceOptions()); err != nil {
		return fail("the run's --source: %v", err)
	}
	c := newCoordinator(cfg, opt, strings.TrimSpace(string(tok)))
	c.run, c.dir, c.info, c.resumed = info.Run, dir, *info, true
	fcfg := netfault.DefaultConfig()
	fcfg.FrameAligned = opt.FrameAligned
	if c.layer, err = netfault.NewLayer(fcfg); err != nil {
		return dir, err
	}
	if err := c.openStores(); err != nil { // store.go
		return dir, err
	}
	outputs, err := readOutputManifest(c.outStore)
	if err != nil {
		return fail("the output manifest: %v", err)
	}
	if err := c.resumeFrom(m, outputs); err != nil {
		return fail("%v", err)
	}
	return dir, c.run1(ctx)
}

// lastSeq is the sequence number of the last whole event of the log at
// path (0 if none): the resumed coordinator's events follow it. A line
// the dead coordinator left half-written is ended first, so that the next
// event starts a line of its own.
func lastSeq(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return 0
	}
	if b[len(b)-1] != '\n' {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			_, _ = f.Write([]byte{'\n'})
			f.Close()
		}
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte{'\n'})
	for i := len(lines) - 1; i >= 0; i-- {
		var e struct {
			Seq uint64 `json:"seq"`
		}
		if json.Unmarshal(lines[i], &e) == nil && e.Seq > 0 {
			return e.Seq
		}
	}
	return 0
}

// adoptNodes takes over the local node processes of the dead
// coordinator: they are not this process's children, so they are
// signalled by pid and watched until they are gone. Those are the
// recorded nodes that were live, those spawned and not joined yet (whose
// pid, which only a join tells the core, is read from the run's
// node_spawned events: LiveNodes), and those lost while paused, which
// are still there, stopped (resumeFrom ends them).
func (c *Coordinator) adoptNodes() {
	var spawned map[string]int
	names := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return nodeLess(names[i], names[j]) })
	for _, name := range names {
		ns := c.nodes[name]
		if ns.local && ns.state == nodeSpawned && ns.pid <= 0 && c.opt.Adopt == nil {
			if spawned == nil {
				spawned = map[string]int{}
				for _, p := range LiveNodes(c.dir) {
					spawned[p.Name] = p.PID
				}
			}
			ns.pid = spawned[name]
		}
		if !ns.local || ns.state == nodeExited || ns.pid <= 0 {
			continue
		}
		var p Process = adopted(ns.pid)
		if c.opt.Adopt != nil {
			p = c.opt.Adopt(name, ns.pid)
		}
		c.linkMu.Lock()
		c.links[name] = &nodeLink{proc: p}
		c.linkMu.Unlock()
		go func() { _ = p.Wait(); c.exitc <- name }()
	}
}

// adopted is a node process another coordinator started.
type adopted int

func (p adopted) Pid() int { return int(p) }

func (p adopted) Kill() error { return p.Signal(syscall.SIGKILL) }

func (p adopted) Signal(s os.Signal) error {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v: not a syscall signal", s)
	}
	return syscall.Kill(int(p), sig)
}

// Wait returns once the process is gone: no such process, or a zombie
// that its parent (init, once the dead coordinator's children were
// orphaned) has not reaped yet.
func (p adopted) Wait() error {
	for {
		if err := syscall.Kill(int(p), 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", int(p))); err == nil {
			// pid (comm) STATE ...: comm may hold spaces and parentheses.
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
