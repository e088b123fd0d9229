package coord

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"spate/control"
	"spate/events"
	"spate/job"
	"spate/state"
	"spate/wire"
)

// TestCoreScripts runs the scenario scripts of coord/testdata/core
// against the coordinator's decisions, with nothing of its I/O: the nodes
// are queues the script reads (what the coordinator sent them), the clock
// is the script's, the checkpoint manifest is written at once, and every
// input goes in through the handlers the event loop calls (handleMsg,
// act, checkHeartbeats). After each step the transcript shows what the
// coordinator sent to each node and the events it emitted; the whole is
// compared with the script's .golden file (regenerated with
// -update-scripts). Steps:
//
//	deploy [nodes=N] [ft=MODE] [ready=K] [recover=parallel] [rescale=restart]   a job of the default shape on N nodes, every node ready (or the first K)
//	ready NODE                                   NODE reports its instances deployed
//	checkpointed INST id=N [full] [parent=P] [sink=LEN] [pos=PART:POS,...]   the instance's node reports it
//	damaged INST id=N                            its node reports the file of checkpoint N damaged
//	lose NODE                                    NODE's control stream ends
//	spawn NODE                                   a node is respawned: its process runs, it has not joined
//	join NODE                                    a spawned node joins the running job
//	restored INST id=N [fellback] [gen=G node=N]  the instance's new node reports its restore (or node N, of generation G)
//	done INST [pos=PART:POS,...]                 the instance's node reports it drained
//	heartbeat INST pos=PART:POS,...              the source's node reports where it is
//	rescale STEP INST|NODE [ranges=LO-HI,...] [after=N] [wm=N] [error=E]   a node answers the rescale in flight (prepared, staged, loaded, released, captured, committed) for the instance, or as the node
//	act VERB [TARGET] [K=V ...]                  a control action
//	drain                                        the run's duration is reached
//	tick D [stall|alive]                         D passes, judged every heartbeat period, with the recoveries' and rescales' ticks (stall: judged once, at its end: the loop stood still; alive: every node beats meanwhile)
//	crash                                        the coordinator dies; a new core resumes from its durable record (the manifest as last written), its work not yet carried out lost
//	rejoin NODE                                  a recorded node comes back to the resumed coordinator
//	beat NODE                                    NODE's heartbeat (its instances' reports)
//	stopped NODE                                 NODE has stopped its instances (the resume's stop, or a --rescale restart's)
//	show                                         placements, done and lost instances, restorable checkpoints
//	# ...                                        a comment, echoed
func TestCoreScripts(t *testing.T) { runScripts(t, "core", runCoreScript) }

// coreHarness is a coordinator driven by a script.
type coreHarness struct {
	t      *testing.T
	c      *core
	now    time.Time
	w      work            // taken from the core, not reported yet
	writes []manifestWrite // manifest writes asked for, not finished yet
	// restores holds each instance's placement as its last restore sent
	// it: a node's restored answer carries that one, not the newest.
	restores map[job.InstanceID]wire.Placement
}

func runCoreScript(t *testing.T, script string) (string, error) {
	h := newCoreHarness(t)
	var out strings.Builder
	for n, line := range strings.Split(script, "\n") {
		if err := h.line(line, &out); err != nil {
			return "", fmt.Errorf("%d: %v", n+1, err)
		}
	}
	return out.String(), nil
}

func newCoreHarness(t *testing.T) *coreHarness {
	return &coreHarness{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), restores: map[job.InstanceID]wire.Placement{}}
}

// line runs one line of a script, its transcript into out, and checks
// the invariants after it.
func (h *coreHarness) line(line string, out *strings.Builder) error {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil
	}
	fmt.Fprintf(out, "> %s\n", line)
	if strings.HasPrefix(line, "#") {
		return nil
	}
	if h.c != nil {
		h.c.now = h.now
	}
	words := strings.Fields(line)
	args := map[string]string{}
	var plain []string
	for _, w := range words[1:] {
		switch k, v, ok := strings.Cut(w, "="); {
		case ok:
			args[k] = v
		case w == "full" || w == "fellback" || w == "stall" || w == "alive":
			args[w] = ""
		default:
			plain = append(plain, w)
		}
	}
	if err := h.step(words[0], plain, args, out); err != nil {
		return fmt.Errorf("%s: %v", words[0], err)
	}
	if h.c != nil {
		h.report(out)
		if err := h.c.checkInvariants(); err != nil {
			return fmt.Errorf("%s: %v", words[0], err)
		}
	}
	return nil
}

// TestTheDrainFixesWhereEverySourceEnds: once the drain has started, the
// grants stop growing however far the sources report, every drain message
// names the same end, and invariant I6 says so (a grant past the end
// breaks it).
func TestTheDrainFixesWhereEverySourceEnds(t *testing.T) {
	h := newCoreHarness(t)
	var out strings.Builder
	for _, line := range []string{"deploy nodes=2", "heartbeat source#0 pos=0:400", "tick 100ms", "drain"} {
		if err := h.line(line, &out); err != nil {
			t.Fatal(err)
		}
	}
	end := maps.Clone(h.c.drainAt)
	if end[0] < h.c.grants.granted[0] || end[0] == 0 {
		t.Fatalf("the drain ends partition 0 at %d, below its grant %d", end[0], h.c.grants.granted[0])
	}
	h.c.heartbeat(h.c.nodes["n1"], &wire.Heartbeat{Instances: []wire.InstanceStats{{ID: "source#0", Positions: map[int]uint64{0: end[0]}}}}, h.now)
	h.now = h.now.Add(time.Second)
	h.c.grant()
	if !maps.Equal(h.c.drainAt, end) || h.c.grants.granted[0] > end[0] {
		t.Fatalf("after the drain: end %v (was %v), grant %v", h.c.drainAt, end, h.c.grants.granted)
	}
	if err := h.c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	h.c.grants.granted[0] = end[0] + 1
	if err := h.c.checkInvariants(); err == nil || !strings.HasPrefix(err.Error(), "I6:") {
		t.Fatalf("a grant past the drain's end: checkInvariants = %v, want I6", err)
	}
}

func (h *coreHarness) step(verb string, plain []string, args map[string]string, out *strings.Builder) error {
	num := func(k string) uint64 {
		v, _ := strconv.ParseUint(args[k], 10, 64)
		return v
	}
	if verb != "deploy" && h.c == nil {
		return fmt.Errorf("deploy first")
	}
	arg := func(i int) (string, error) {
		if i >= len(plain) {
			return "", fmt.Errorf("missing argument %d", i+1)
		}
		return plain[i], nil
	}
	switch verb {
	case "deploy":
		n := int(max(num("nodes"), 1))
		ready := n
		if _, ok := args["ready"]; ok {
			ready = int(num("ready"))
		}
		return h.deploy(n, ready, args["ft"], args["recover"], args["rescale"])
	case "ready":
		node, err := arg(0)
		if err != nil {
			return err
		}
		if h.c.nodes[node] == nil {
			return fmt.Errorf("no node %s", node)
		}
		if err := h.c.handleMsg(nodeMsg{node: node, ctl: &wire.Control{Kind: wire.CtlReady}}); err != nil {
			return err
		}
	case "checkpointed":
		inst, err := arg(0)
		if err != nil {
			return err
		}
		p := h.c.placeOf[job.InstanceID(inst)]
		if p == nil {
			return fmt.Errorf("no instance %s", inst)
		}
		_, full := args["full"]
		cp := &wire.Checkpoint{Instance: p.ID, Gen: p.Gen, ID: num("id"), Full: full, Parent: num("parent"),
			File: state.FileName(inst, p.Gen, num("id"), full), Positions: positions(args["pos"])}
		if v, ok := args["sink"]; ok {
			cp.SinkFile = SinkFileName(p.Op, p.Index, p.Gen)
			cp.SinkLen, _ = strconv.ParseInt(v, 10, 64)
		}
		h.msg(p.Node, &wire.Control{Kind: wire.CtlCheckpointed, Checkpoint: cp})
	case "damaged":
		inst, err := arg(0)
		if err != nil {
			return err
		}
		p := h.c.placeOf[job.InstanceID(inst)]
		cp, ok := h.c.manifest.byID[p.ID][num("id")]
		if !ok {
			return fmt.Errorf("%s has no checkpoint %d", inst, num("id"))
		}
		h.msg(p.Node, &wire.Control{Kind: wire.CtlDamaged, Checkpoint: &wire.Checkpoint{Instance: p.ID, Gen: p.Gen, ID: cp.ID, File: cp.File}})
	case "lose":
		node, err := arg(0)
		if err != nil {
			return err
		}
		ns := h.c.nodes[node]
		if ns == nil {
			return fmt.Errorf("no node %s", node)
		}
		if err := h.c.handleMsg(nodeMsg{node: node, err: fmt.Errorf("EOF")}); err != nil {
			return err
		}
	case "spawn":
		node, err := arg(0)
		if err != nil {
			return err
		}
		h.c.nodes[node] = &nodeState{name: node, state: nodeSpawned}
	case "join":
		node, err := arg(0)
		if err != nil {
			return err
		}
		if err := h.c.join(&nodeState{name: node, listen: "mem:" + node}); err != nil {
			return err
		}
	case "restored":
		inst, err := arg(0)
		if err != nil {
			return err
		}
		p := h.c.placeOf[job.InstanceID(inst)]
		_, fellback := args["fellback"]
		place, node := *p, p.Node
		if sent, ok := h.restores[p.ID]; ok && sent.Gen == p.Gen {
			place = sent
		}
		if g := num("gen"); g > 0 { // the answer of an earlier placement
			place.Gen, place.Node, node = g, args["node"], args["node"]
		}
		h.msg(node, &wire.Control{Kind: wire.CtlRestored, Restore: &wire.Restore{Place: place, ID: num("id"), Fellback: fellback}})
	case "done":
		inst, err := arg(0)
		if err != nil {
			return err
		}
		p := h.c.placeOf[job.InstanceID(inst)]
		h.msg(p.Node, &wire.Control{Kind: wire.CtlDone, Done: &wire.Done{Instance: p.ID, Gen: p.Gen, Positions: positions(args["pos"])}})
	case "heartbeat":
		inst, err := arg(0)
		if err != nil {
			return err
		}
		p := h.c.placeOf[job.InstanceID(inst)]
		h.c.heartbeat(h.c.nodes[p.Node], &wire.Heartbeat{Instances: []wire.InstanceStats{{ID: p.ID, Positions: positions(args["pos"])}}}, h.now)
	case "rescale":
		step, err := arg(0)
		if err != nil {
			return err
		}
		who, err := arg(1)
		if err != nil {
			return err
		}
		r := h.c.eds.cur
		if r == nil {
			return fmt.Errorf("no rescale in flight")
		}
		m := &wire.Rescale{ID: r.id, Step: step, Op: r.op, Ranges: ranges(args["ranges"]), After: num("after"), Error: args["error"]}
		m.WM, _ = strconv.ParseInt(args["wm"], 10, 64)
		node := who
		if p := h.c.placeOf[job.InstanceID(who)]; p != nil {
			m.Instance, m.Gen, node = p.ID, p.Gen, p.Node
		} else if f := r.freshOf(job.InstanceID(who)); f != nil {
			m.Instance, m.Gen, node = f.ID, f.Gen, f.Node
		} else if h.c.nodes[who] == nil {
			return fmt.Errorf("no instance or node %s", who)
		}
		if step == wire.RescaleCaptured {
			m.CkptID = num("id")
			m.File = state.FileName(who, m.Gen, m.CkptID, true)
		}
		h.msg(node, &wire.Control{Kind: wire.CtlRescale, Rescale: m})
	case "act":
		verb, err := arg(0)
		if err != nil {
			return err
		}
		a := control.Action{Verb: verb, Args: args}
		if len(plain) > 1 {
			a.Target = plain[1]
		}
		res, err := h.c.act(a)
		if err != nil {
			fmt.Fprintf(out, "refused: %v\n", err)
		} else {
			fmt.Fprintf(out, "answer: %s\n", res.Text)
		}
	case "drain":
		h.c.drain("the script")
	case "tick":
		d, err := time.ParseDuration(strings.Join(plain, ""))
		if err != nil {
			return err
		}
		// The loop judges once a heartbeat period; a stall is one step.
		if _, stall := args["stall"]; stall {
			h.now = h.now.Add(d)
			h.c.now = h.now
			h.c.checkHeartbeats()
			break
		}
		_, alive := args["alive"]
		for step := h.c.cfg.Heartbeat; d > 0; d -= step {
			h.now = h.now.Add(min(step, d))
			h.c.now = h.now
			for _, ns := range h.c.nodes {
				if alive && !ns.gone() {
					ns.lastBeat = h.now
				}
			}
			h.c.checkHeartbeats()
			h.c.checkCaughtUp()
			h.c.edsTick()
			h.c.grant()
			if err := h.c.resumeTick(); err != nil {
				return err
			}
		}
	case "crash":
		return h.crash()
	case "rejoin":
		node, err := arg(0)
		if err != nil {
			return err
		}
		if err := h.c.join(&nodeState{name: node, listen: "mem:" + node}); err != nil {
			fmt.Fprintf(out, "refused: %v\n", err)
		}
	case "beat":
		node, err := arg(0)
		if err != nil {
			return err
		}
		h.c.heartbeat(h.c.nodes[node], &wire.Heartbeat{Node: node}, h.now)
	case "stopped":
		node, err := arg(0)
		if err != nil {
			return err
		}
		switch {
		case h.c.resume != nil:
			h.msg(node, &wire.Control{Kind: wire.CtlRescale, Rescale: &wire.Rescale{ID: h.c.resume.id, Step: wire.RescaleStopped}})
		case h.c.eds.restart != nil:
			r := h.c.eds.restart
			h.msg(node, &wire.Control{Kind: wire.CtlRescale, Rescale: &wire.Rescale{ID: r.id, Step: wire.RescaleStopped, Op: r.op}})
		default:
			return fmt.Errorf("no resume or restart in flight")
		}
	case "show":
		h.show(out)
	default:
		return fmt.Errorf("unknown step")
	}
	return nil
}

// deploy makes the coordinator and n nodes joined, of which the first
// ready report ready (the job starts once all have).
func (h *coreHarness) deploy(n, ready int, ft, recover, rescale string) error {
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Interval, cfg.Respawn = n, "1s", false
	if ft != "" {
		cfg.FT = ft
	}
	if recover != "" {
		cfg.Recover = recover
	}
	if rescale != "" {
		cfg.Rescale = rescale
	}
	c := newCore(cfg, "run", h.now)
	h.c = c
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		if err := c.join(&nodeState{name: name, listen: "mem:" + name}); err != nil {
			return err
		}
	}
	if err := c.deploy(); err != nil {
		return err
	}
	for _, name := range c.order[:min(ready, len(c.order))] {
		if err := c.handleMsg(nodeMsg{node: name, ctl: &wire.Control{Kind: wire.CtlReady}}); err != nil {
			return err
		}
	}
	return nil
}

// crash replaces the core by one resumed from the record the dead one
// last made durable: the manifest of its last finished write (the script
// finishes every write at once), as a resumed coordinator reads it.
func (h *coreHarness) crash() error {
	old := h.c
	old.manifest.Coord = old.record()
	b, err := json.Marshal(old.manifest)
	old.manifest.Coord = nil
	if err != nil {
		return err
	}
	m, err := parseManifest(b)
	if err != nil {
		return err
	}
	h.w, h.writes = work{}, nil // what it had not carried out is lost
	c := newCore(old.cfg, old.run, h.now)
	c.dir = old.dir
	if err := c.resumeFrom(m, OutputManifest{Limits: maps.Clone(old.outputs.Limits)}); err != nil {
		return err
	}
	h.c = c
	return nil
}

// msg hands the coordinator a control message from node, and completes
// the manifest writes it asks for (and those asked for before).
func (h *coreHarness) msg(node string, m *wire.Control) {
	if err := h.c.handleMsg(nodeMsg{node: node, ctl: m}); err != nil {
		h.t.Fatalf("%s: %v", m.Kind, err)
	}
	for h.takeWork(); len(h.writes) > 0; h.takeWork() {
		w := h.writes[0]
		h.writes = h.writes[1:]
		h.c.manifestWritten(w)
	}
}

// takeWork takes what the core decided into h.w, keeping the manifest
// writes aside.
func (h *coreHarness) takeWork() {
	w := h.c.take()
	for _, o := range w.ops {
		if m, ok := o.(writeManifestOp); ok {
			h.writes = append(h.writes, m.w)
		}
	}
	h.w.ops = append(h.w.ops, w.ops...)
	h.w.events = append(h.w.events, w.events...)
}

// report prints what the coordinator sent to each node and emitted since
// the last step.
func (h *coreHarness) report(out *strings.Builder) {
	h.takeWork()
	w := h.w
	h.w = work{}
	for _, name := range h.c.allNodes() {
		for _, o := range w.ops {
			s, ok := o.(sendOp)
			if !ok || s.to != name {
				continue
			}
			var m wire.Control
			if err := json.Unmarshal(s.b, &m); err != nil {
				h.t.Fatalf("a message to %s: %v", name, err)
			}
			fmt.Fprintf(out, "%s <- %s\n", name, describe(m))
			if m.Kind == wire.CtlRestore && m.Restore != nil {
				h.restores[m.Restore.Place.ID] = m.Restore.Place // what its restore answers with
			}
		}
	}
	for _, e := range w.events {
		switch e.Kind {
		case events.Throughput, events.Metrics, events.Interval:
			continue
		}
		fmt.Fprintf(out, "event %s: %s\n", e.Kind, e.Text)
	}
}

// describe is a control message in a line: its kind and what a reader of
// the transcript needs of it.
func describe(m wire.Control) string {
	switch m.Kind {
	case wire.CtlDeploy:
		return fmt.Sprintf("deploy (%d instances)", len(m.Deploy.Instances))
	case wire.CtlRestore:
		r := m.Restore
		s := fmt.Sprintf("restore %s gen %d chain %v", r.Place.ID, r.Place.Gen, r.Chain)
		if len(r.Fallback) > 0 {
			s += fmt.Sprintf(" fallback %v", r.Fallback)
		}
		if r.Scratch {
			s += " scratch"
		}
		for _, sl := range r.Slices {
			s += fmt.Sprintf(" slice %v", sl.Ranges)
		}
		if len(r.EndAt) > 0 {
			s += fmt.Sprintf(" end_at %v", sortedPositions(r.EndAt))
		}
		for _, q := range r.Plan {
			if q.Node == "" {
				s += fmt.Sprintf(" unplaced %s", q.ID)
			}
		}
		return s
	case wire.CtlReroute:
		node := m.Reroute.Node
		if node == "" {
			node = "no node"
		}
		return fmt.Sprintf("reroute %s to %s gen %d", m.Reroute.ID, node, m.Reroute.Gen)
	case wire.CtlCompleted, wire.CtlCompacted:
		s := fmt.Sprintf("%s %s %d", m.Kind, m.Checkpoint.Instance, m.Checkpoint.ID)
		if m.Checkpoint.Fallback != 0 {
			s += fmt.Sprintf(" fallback %d", m.Checkpoint.Fallback) // trims to its positions
		}
		return s
	case wire.CtlDrain, wire.CtlGrant:
		return fmt.Sprintf("%s until %v", m.Kind, sortedPositions(m.Until))
	case wire.CtlLost:
		return fmt.Sprintf("lost %v", m.Instances)
	case wire.CtlRescale:
		r := m.Rescale
		s := "rescale " + r.Step
		if r.Instance != "" {
			s += " " + string(r.Instance)
		}
		if len(r.Ranges) > 0 {
			s += fmt.Sprintf(" %v", r.Ranges)
		}
		if len(r.Chain) > 0 {
			s += fmt.Sprintf(" chain %v", r.Chain)
		} else if r.File != "" {
			s += " file " + r.File
		}
		if len(r.Plan) > 0 {
			var ps []string
			for _, q := range r.Plan {
				ps = append(ps, fmt.Sprintf("%s@%s%v", q.ID, q.Node, q.Ranges))
			}
			s += " plan " + strings.Join(ps, " ")
		}
		if len(r.Hold) > 0 {
			s += fmt.Sprintf(" hold %v", r.Hold)
		}
		return s
	}
	return string(m.Kind)
}

func (h *coreHarness) show(out *strings.Builder) {
	c := h.c
	ids := make([]string, 0, len(c.placeOf))
	for id := range c.placeOf {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := c.placeOf[job.InstanceID(id)]
		what := ""
		switch {
		case c.done[p.ID] != nil:
			what = " done"
		case c.lost[p.ID]:
			what = " lost"
		case slices.ContainsFunc(c.awaiting, func(a awaiting) bool { return slices.Contains(a.ids, p.ID) }):
			what = " awaiting a node"
		}
		_, cps := c.manifest.restorable(p.ID)
		var rest []uint64
		for _, cp := range cps {
			rest = append(rest, cp.ID)
		}
		fmt.Fprintf(out, "  %s on %s gen %d%s, restorable %v\n", id, p.Node, p.Gen, what, rest)
	}
}

// ranges parses LO-HI,... (key groups LO up to HI, HI excluded).
func ranges(s string) []job.Range {
	var rs []job.Range
	for _, lh := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(lh, "-")
		if !ok {
			continue
		}
		l, _ := strconv.Atoi(lo)
		h, _ := strconv.Atoi(hi)
		rs = append(rs, job.Range{Lo: job.KeyGroup(l), Hi: job.KeyGroup(h)})
	}
	return rs
}

// positions parses PART:POS,...
func positions(s string) map[int]uint64 {
	if s == "" {
		return nil
	}
	m := map[int]uint64{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, ":")
		p, _ := strconv.Atoi(k)
		m[p], _ = strconv.ParseUint(v, 10, 64)
	}
	return m
}

func sortedPositions(m map[int]uint64) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d:%d", k, m[k]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
