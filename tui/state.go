package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"spate/control"
	"spate/events"
)

// Kinds the dashboard knows that no engine component emits: a pause is a
// fault_started (verb pause), but a recording made by hand may say
// node_paused and node_resumed; and the log's own lines (an action sent,
// its result).
const (
	kindNodePaused  events.Kind = "node_paused"
	kindNodeResumed events.Kind = "node_resumed"
	kindNote        events.Kind = "tui"
)

// state is everything the dashboard knows, folded from the event stream
// (and seeded by control.Status). It is pure: apply takes an event and
// changes only the state; no clocks, no I/O. Every history is bounded.
type state struct {
	run, job, ft, phase string
	source              string
	first, last         time.Time // times of the first and the latest event
	ended               time.Time // run_finished: the run's clock stops here
	total               uint64    // events applied
	lastSeq             uint64

	brk string // the broken variants on (spate up --break), "" for none

	nodes     map[string]*nodeInfo
	nodeOrder []string
	insts     map[string]*instInfo
	instOrder []string
	opOrder   []string

	ckpts      []*ckptRow // oldest first, at most maxCkpts
	ckptByInst map[string][]time.Time

	backups     map[string]*backupRow
	backupOrder []string
	spills      map[string]int
	pauses      map[string]int // backup_full pauses (backpressure) per instance

	rescales   []*rescaleRow
	autoscales []autoscaleRow

	tuner      map[string]*tunerRow
	tunerOrder []string

	recoveries []*recovery

	faults   []*fault
	faultIdx map[string]*fault

	tput []tputPoint // throughput samples, oldest first

	space spaceRec // what the space-time diagrams fold (spacetime.go)

	log    []logEntry // the recent events, oldest first (see appendLog)
	logVer uint64     // changes whenever log does
}

// Bounds of the histories.
const (
	maxLog        = 2000
	maxCkpts      = 500
	maxTput       = 600
	maxRecoveries = 100
	maxRescales   = 100
	maxAutoscales = 100
	maxFaults     = 200
	maxTunerPts   = 240
)

type nodeInfo struct {
	ID, State, Addr string
	PID             int
	Since           time.Time
	CPU, RSS        float64
	InRate, OutRate float64
	Backlog         float64
	HasMetrics      bool
}

type instInfo struct {
	ID, Op, Node string
	Index        int
	Gen          uint64
	KeyGroups    string // ranges or partitions, as text
	State        string // running, lost, restoring, done
	In, Out      float64
	InRate       float64
	OutRate      float64
	Backlog      float64
	HasRates     bool
	Pressure     string // OK, LOW, HIGH, or ""
	Interval     time.Duration
	LastCkpt     int
}

type ckptRow struct {
	ID                      int
	Instance, Node          string
	Full, Global, Fallback  bool
	Status                  string // completed, failed, fallback
	Trigger, End            time.Time
	Capture, Persist, Total time.Duration
	Raw, Stored             int64
	Keys                    int
}

type backupRow struct {
	Instance, To, Slice string
	Held, Freed         int64
	UpTo                int64
	Positions           int
	Trims               int
	TrimTimes           []time.Time // recent trims, for trims per second
	Last                time.Time
}

type rescaleRow struct {
	Op, ID        string
	From, To      int
	Phase         string
	Moves         int
	Bytes         int64
	PauseMs       float64
	Start, Update time.Time
	Done          bool
	Phases        []phaseMark
}

type phaseMark struct {
	Name string
	At   time.Time
}

type autoscaleRow struct {
	At       time.Time
	Op       string
	From, To int
	Reason   string
}

type tunerRow struct {
	Instance string
	Interval time.Duration
	Reason   string
	Inputs   events.IntervalInputs
	At       time.Time
	Points   []tunerPoint
}

type tunerPoint struct {
	At       time.Time
	Interval time.Duration
}

type recovery struct {
	Node      string
	Suspect   time.Time
	Lost      time.Time
	Global    bool
	Ckpt      int
	Records   int64
	Restored  time.Time
	Done      time.Time
	Insts     []*instRecovery
	Reason    string
	Completed bool
}

type instRecovery struct {
	Instance, To   string
	Placed         time.Time
	Restored, Done time.Time
	Ckpt           int
	Fellback       bool
	Replayed       int64
	RestoreMs      float64
	CatchUpMs      float64
	TotalMs        float64
}

type fault struct {
	ID           string
	Verb, Target string
	Nodes        []string
	Args         string
	Start, End   time.Time
	Implicit     bool // a node lost outside the API (kill -9 by hand)
}

type tputPoint struct {
	At           time.Time
	In, Out, Lag float64
}

// logEntry is one line of the event log: an event, or the TUI's own note
// (an action sent, its result).
type logEntry struct {
	E     events.Event
	Local bool // the TUI's own line
	Bad   bool // an error or a refused action
}

func newState() *state {
	return &state{
		nodes:      map[string]*nodeInfo{},
		insts:      map[string]*instInfo{},
		ckptByInst: map[string][]time.Time{},
		backups:    map[string]*backupRow{},
		spills:     map[string]int{},
		pauses:     map[string]int{},
		tuner:      map[string]*tunerRow{},
		faultIdx:   map[string]*fault{},
		space:      newSpaceRec(),
	}
}

// instKey folds the two spellings of an instance (count#1 in events,
// count/1 in the control API) into one.
func instKey(id string) string { return strings.Replace(id, "/", "#", 1) }

func (s *state) node(id string) *nodeInfo {
	n, ok := s.nodes[id]
	if !ok {
		n = &nodeInfo{ID: id, State: "joining"}
		s.nodes[id] = n
		s.nodeOrder = append(s.nodeOrder, id)
		sort.Slice(s.nodeOrder, func(i, j int) bool { return lessID(s.nodeOrder[i], s.nodeOrder[j]) })
	}
	return n
}

func (s *state) inst(id string) *instInfo {
	id = instKey(id)
	in, ok := s.insts[id]
	if !ok {
		op, idx := id, 0
		if i := strings.LastIndexByte(id, '#'); i >= 0 {
			op = id[:i]
			idx = atoiSafe(id[i+1:])
		}
		in = &instInfo{ID: id, Op: op, Index: idx, State: "running"}
		s.insts[id] = in
		s.instOrder = append(s.instOrder, id)
		found := false
		for _, o := range s.opOrder {
			if o == op {
				found = true
			}
		}
		if !found {
			s.opOrder = append(s.opOrder, op)
		}
		s.sortInsts()
	}
	return in
}

func (s *state) sortInsts() {
	pos := map[string]int{}
	for i, o := range s.opOrder {
		pos[o] = i
	}
	sort.SliceStable(s.instOrder, func(i, j int) bool {
		a, b := s.insts[s.instOrder[i]], s.insts[s.instOrder[j]]
		if a.Op != b.Op {
			return pos[a.Op] < pos[b.Op]
		}
		return a.Index < b.Index
	})
}

// nodeInsts lists the instances placed on node id.
func (s *state) nodeInsts(id string) []string {
	var out []string
	for _, k := range s.instOrder {
		if in := s.insts[k]; in.Node == id {
			out = append(out, k)
		}
	}
	return out
}

// seed folds a control.Status snapshot in: it fills what events have not
// said yet (a TUI that attaches late) and never overrides newer events.
func (s *state) seed(st control.Status) {
	if s.run == "" {
		s.run = st.Run
	}
	if s.job == "" {
		s.job = st.Job
	}
	if s.ft == "" {
		s.ft = st.FT
	}
	if s.brk == "" {
		s.brk = st.Break
	}
	if st.Phase != "" && (s.phase == "" || s.phase == "joining") {
		s.phase = st.Phase
	}
	for _, n := range st.Nodes {
		_, known := s.nodes[n.ID]
		ni := s.node(n.ID)
		if !known || ni.State == "joining" {
			ni.State = n.State
		}
		if ni.PID == 0 {
			ni.PID = n.PID
		}
		if ni.Addr == "" {
			ni.Addr = n.Addr
		}
	}
	for _, in := range st.Instances {
		_, known := s.insts[instKey(in.ID)]
		ii := s.inst(in.ID)
		if !known {
			ii.Node, ii.Gen = in.Node, in.Generation
			ii.KeyGroups = groupsText(in.KeyGroups)
			if in.Op != "" && ii.Op != in.Op {
				ii.Op = in.Op
			}
		}
		if ii.Interval == 0 && in.IntervalMs > 0 {
			ii.Interval = time.Duration(in.IntervalMs) * time.Millisecond
		}
	}
}

// groupsText renders a sorted list of key groups as ranges: [0,64) [96,128).
func groupsText(g []int) string {
	if len(g) == 0 {
		return ""
	}
	g = append([]int(nil), g...)
	sort.Ints(g)
	var b strings.Builder
	lo, prev := g[0], g[0]
	flush := func() {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("[" + itoa(lo) + "," + itoa(prev+1) + ")")
	}
	for _, k := range g[1:] {
		if k == prev+1 {
			prev = k
			continue
		}
		flush()
		lo, prev = k, k
	}
	flush()
	return b.String()
}

// apply folds one event into the state. The kind decides; the payload
// is read as the kind's type (a missing one reads as zero values).
func (s *state) apply(e events.Event) {
	s.total++
	if e.Seq > s.lastSeq {
		s.lastSeq = e.Seq
	}
	if s.first.IsZero() {
		s.first = e.Time
	}
	if e.Time.After(s.last) {
		s.last = e.Time
	}
	switch e.Kind {
	case events.RunStarted:
		s.phase = "running"
		if f, ok := e.Fields.(events.RunStartedFields); ok && f.Break != "" {
			s.brk = f.Break
		}
		if strings.HasPrefix(e.Text, "run ") {
			if i := strings.IndexByte(e.Text, ':'); i > 4 {
				s.run = e.Text[4:i]
			}
		}
		if i := strings.Index(e.Text, "job "); i >= 0 {
			s.job = firstWord(e.Text[i+4:])
		}
		if i := strings.Index(e.Text, "source "); i >= 0 {
			s.source = strings.TrimSuffix(firstWord(e.Text[i+7:]), ",")
		}
	case events.NodeSpawned:
		f, _ := e.Fields.(events.NodeSpawnedFields)
		n := s.node(e.Node)
		if f.PID != 0 {
			n.PID = f.PID
		}
		s.setNode(n, "spawned", e.Time)
	case events.NodeJoined:
		f, _ := e.Fields.(events.NodeJoinedFields)
		n := s.node(e.Node)
		if f.PID != 0 {
			n.PID = f.PID
		}
		n.Addr = f.Listen
		s.setNode(n, "alive", e.Time)
	case events.NodeSuspect:
		s.setNode(s.node(e.Node), "suspect", e.Time)
		s.openRecovery(e.Node, e.Time, true)
	case events.NodeLost:
		f, _ := e.Fields.(events.NodeLostFields)
		s.setNode(s.node(e.Node), "dead", e.Time)
		r := s.openRecovery(e.Node, e.Time, false)
		r.Lost = e.Time
		r.Reason = f.Reason
		for _, id := range f.Instances {
			s.inst(string(id)).State = "lost"
			r.inst(instKey(string(id)))
		}
		if strings.Contains(e.Text, "rolls back") {
			r.Global = true
		}
		if !s.faultOn(e.Node) {
			s.addFault(&fault{ID: "e" + itoa(int(e.Seq)), Verb: "lost",
				Target: e.Node, Nodes: []string{e.Node}, Start: e.Time, Implicit: true})
		}
	case events.NodeExited:
		n := s.node(e.Node)
		if n.State != "dead" {
			s.setNode(n, "exited", e.Time)
		}
	case events.NodeRefused:
		// a join refused: the log says it
	case kindNodePaused:
		s.setNode(s.node(e.Node), "paused", e.Time)
	case kindNodeResumed:
		s.setNode(s.node(e.Node), "alive", e.Time)
	case events.Partition:
		f, _ := e.Fields.(events.PartitionFields)
		s.applyPartition(e, f.Groups)
	case events.InstancePlaced:
		f, _ := e.Fields.(events.InstancePlacedFields)
		in := s.inst(e.Instance)
		in.Node = e.Node
		if f.Op != "" {
			in.Op = f.Op
		}
		in.Gen = max(in.Gen, 1)
		in.KeyGroups = rangesText(f.Ranges)
		if in.KeyGroups == "" && len(f.Partitions) > 0 {
			ps := make([]string, len(f.Partitions))
			for i, p := range f.Partitions {
				ps[i] = "p" + itoa(p)
			}
			in.KeyGroups = strings.Join(ps, ",")
		}
		in.State = "running"
	case events.JobStarted:
		s.phase = "running"
	case events.Throughput:
		f, _ := e.Fields.(events.ThroughputFields)
		p := tputPoint{At: e.Time, In: f.InRps, Out: f.OutRps}
		if f.LagMs != nil {
			p.Lag = float64(*f.LagMs)
		}
		// At most one sample per 100 ms (the latest), so the history
		// spans minutes even when samples come faster.
		if n := len(s.tput); n > 0 && p.At.Sub(s.tput[n-1].At) < 100*time.Millisecond && !p.At.Before(s.tput[n-1].At) {
			s.tput[n-1] = p
		} else {
			s.tput = appendBounded(s.tput, p, maxTput)
		}
	case events.DrainStarted:
		s.phase = "draining"
	case events.InstanceDone:
		f, _ := e.Fields.(events.InstanceDoneFields)
		in := s.inst(e.Instance)
		in.State = "done"
		in.In, in.Out = float64(f.In), float64(f.Out)
	case events.Checkpoint:
		f, _ := e.Fields.(events.CheckpointFields)
		s.applyCheckpoint(e, f)
	case events.CheckpointFallback:
		f, _ := e.Fields.(events.CheckpointFallbackFields)
		row := &ckptRow{ID: int(f.Checkpoint), Instance: instKey(e.Instance), Node: e.Node,
			Status: "fallback", Fallback: true, Trigger: e.Time, End: e.Time}
		s.ckpts = appendBounded(s.ckpts, row, maxCkpts)
	case events.RecoveryPlaced:
		f, _ := e.Fields.(events.RecoveryPlacedFields)
		s.applyRecoveryPlaced(e, f)
	case events.RecoveryRestored:
		f, _ := e.Fields.(events.RecoveryRestoredFields)
		r := s.latestRecovery()
		if r == nil {
			break
		}
		if e.Instance == "" {
			r.Restored = e.Time
			if f.Checkpoint != 0 || e.Fields != nil {
				r.Ckpt = int(f.Checkpoint)
			}
			if r.Global {
				r.Done, r.Completed = e.Time, true
				s.endImplicit(r.Node, e.Time)
				for _, in := range s.insts {
					if in.State == "lost" || in.State == "restoring" {
						in.State = "running"
					}
				}
			}
			break
		}
		ir := r.inst(instKey(e.Instance))
		ir.Restored = e.Time
		ir.Ckpt = int(f.Checkpoint)
		ir.Fellback = f.Fellback
		s.inst(e.Instance).State = "replaying"
	case events.Replay:
		f, _ := e.Fields.(events.ReplayFields)
		if r := s.latestRecovery(); r != nil && f.To != "" {
			r.inst(instKey(f.To)).Replayed += int64(f.Records)
		}
	case events.RecoveryDone:
		f, _ := e.Fields.(events.RecoveryDoneFields)
		r := s.latestRecovery()
		in := s.inst(e.Instance)
		in.State = "running"
		if r == nil {
			break
		}
		ir := r.inst(in.ID)
		ir.Done = e.Time
		ir.RestoreMs = float64(f.RestoreMs)
		ir.CatchUpMs = float64(f.CatchUpMs)
		ir.TotalMs = float64(f.TotalMs)
		if r.allDone() {
			r.Done, r.Completed = e.Time, true
			s.endImplicit(r.Node, e.Time)
		}
	case events.RunFinished:
		s.phase, s.ended = "finished", e.Time
		for _, id := range s.nodeOrder {
			if n := s.nodes[id]; n.State != "dead" && n.State != "exited" {
				s.setNode(n, "stopped", e.Time) // the run is over: no node is alive in it
			}
		}
	case events.FaultStarted:
		f, _ := e.Fields.(events.FaultStartedFields)
		ft := &fault{ID: itoa(f.ID), Verb: f.Verb, Target: f.Target, Nodes: f.Nodes, Args: argsText(f.Args), Start: e.Time}
		if f.ID == 0 {
			ft.ID = "f" + itoa(int(e.Seq))
		}
		s.addFault(ft)
		for _, n := range ft.Nodes {
			switch ft.Verb {
			case "pause":
				s.setNode(s.node(n), "paused", e.Time)
			case "partition":
				s.setNode(s.node(n), "partitioned", e.Time)
			}
		}
	case events.FaultEnded:
		f, _ := e.Fields.(events.FaultEndedFields)
		if ft, ok := s.faultIdx[itoa(f.ID)]; ok && ft.End.IsZero() {
			ft.End = e.Time
			for _, n := range ft.Nodes {
				if nd := s.node(n); nd.State == "partitioned" || nd.State == "paused" {
					s.setNode(nd, "alive", e.Time)
				}
			}
		}
	case events.RescalePlanned, events.RescaleStaged, events.RescaleCaptured, events.RescaleMoved,
		events.RescaleRerouted, events.RescaleDone:
		s.applyRescale(e)
	case events.Autoscale:
		f, _ := e.Fields.(events.AutoscaleFields)
		why := f.Reason
		if f.Refused != "" {
			why += "; refused: " + f.Refused // the rules of spate scale (--ft, a rescale in flight)
		}
		s.autoscales = appendBounded(s.autoscales, autoscaleRow{At: e.Time, Op: f.Op, From: f.From, To: f.To, Reason: why}, maxAutoscales)
	case events.Interval:
		f, _ := e.Fields.(events.IntervalFields)
		id := instKey(firstNonEmpty(f.Instance, e.Instance))
		if id == "" {
			break
		}
		t, ok := s.tuner[id]
		if !ok {
			t = &tunerRow{Instance: id}
			s.tuner[id] = t
			s.tunerOrder = append(s.tunerOrder, id)
			sort.Strings(s.tunerOrder)
		}
		t.Interval = time.Duration(f.IntervalMs) * time.Millisecond
		t.Reason = f.Reason
		t.Inputs = f.Inputs
		t.At = e.Time
		t.Points = appendBounded(t.Points, tunerPoint{At: e.Time, Interval: t.Interval}, maxTunerPts)
		if in, ok := s.insts[id]; ok { // not "global", --ft global's barrier period
			in.Interval = t.Interval
		}
	case events.Trim:
		f, _ := e.Fields.(events.TrimFields)
		s.applyTrim(e, f)
	case events.BackupSpill:
		s.spills[instKey(e.Instance)]++
	case events.BackupFull:
		if f, _ := e.Fields.(events.BackupFullFields); f.Full {
			s.pauses[instKey(e.Instance)]++
		}
	case events.Metrics:
		f, _ := e.Fields.(events.MetricsFields)
		s.applyMetrics(e, f)
	}
	s.space.add(e)
	s.appendLog(logEntry{E: e, Bad: e.Kind == events.Error || e.Kind == events.FrameError || e.Kind == events.InstanceUnrecoverable})
}

// argsText is a fault's arguments as {k=v ...}, sorted by key.
func argsText(args map[string]string) string {
	if len(args) == 0 {
		return ""
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + args[k]
	}
	return "{" + strings.Join(keys, " ") + "}"
}

// rangesText is key-group ranges as [0,64) [96,128).
func rangesText[R fmt.Stringer](rs []R) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, " ")
}

// appendLog adds a line to the log. When the log is full it drops a
// quarter of it, the oldest frequent events first (throughput, metrics,
// checkpoints, trims...), so that under a flood the lifecycle events, the
// errors and the dashboard's own lines (actions and their results) stay.
func (s *state) appendLog(l logEntry) {
	if len(s.log) >= maxLog {
		drop := maxLog / 4
		j := 0
		for _, le := range s.log {
			if drop > 0 && !le.Local && !le.Bad && !lifecycle(le.E.Kind) {
				drop--
				continue
			}
			s.log[j] = le
			j++
		}
		if drop > 0 {
			j = copy(s.log, s.log[drop:j])
		}
		clear(s.log[j:])
		s.log = s.log[:j]
	}
	s.log = append(s.log, l)
	s.logVer++
}

func (s *state) setNode(n *nodeInfo, st string, t time.Time) {
	if n.State != st {
		n.State, n.Since = st, t
	}
}

func (s *state) faultOn(node string) bool {
	for _, f := range s.faults {
		if f.End.IsZero() {
			for _, n := range f.Nodes {
				if n == node {
					return true
				}
			}
		}
	}
	return false
}

func (s *state) addFault(f *fault) {
	if len(s.faults) >= maxFaults {
		old := s.faults[0]
		delete(s.faultIdx, old.ID)
		s.faults = s.faults[1:]
	}
	s.faults = append(s.faults, f)
	s.faultIdx[f.ID] = f
}

func (s *state) endImplicit(node string, t time.Time) {
	for _, f := range s.faults {
		if f.Implicit && f.End.IsZero() && len(f.Nodes) == 1 && f.Nodes[0] == node {
			f.End = t
		}
	}
}

func (s *state) applyPartition(e events.Event, groups [][]string) {
	if len(groups) < 2 {
		for _, id := range s.nodeOrder {
			if n := s.nodes[id]; n.State == "partitioned" {
				s.setNode(n, "alive", e.Time)
			}
		}
		return
	}
	big := 0
	for i, g := range groups {
		if len(g) > len(groups[big]) {
			big = i
		}
	}
	for i, g := range groups {
		for _, id := range g {
			n := s.node(id)
			if i == big {
				if n.State == "partitioned" {
					s.setNode(n, "alive", e.Time)
				}
			} else if n.State != "dead" && n.State != "exited" {
				s.setNode(n, "partitioned", e.Time)
			}
		}
	}
}

func (s *state) applyCheckpoint(e events.Event, f events.CheckpointFields) {
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	row := &ckptRow{ID: int(f.ID), Instance: instKey(e.Instance), Node: e.Node,
		Full: f.Full, Global: f.Global, Status: "completed", End: e.Time,
		Capture: us(f.CaptureUs), Persist: us(f.PersistUs), Total: us(f.TotalUs),
		Raw: int64(f.RawBytes), Stored: int64(f.Bytes), Keys: f.Keys}
	if row.Total == 0 {
		row.Total = time.Duration(f.TookMs) * time.Millisecond
	}
	if row.Global {
		row.Full = true
		row.Instance = "(global)"
	}
	row.Trigger = e.Time.Add(-row.Total)
	s.ckpts = appendBounded(s.ckpts, row, maxCkpts)
	if e.Instance != "" {
		in := s.inst(e.Instance)
		in.LastCkpt = row.ID
		ts := appendBounded(s.ckptByInst[in.ID], e.Time, 16)
		s.ckptByInst[in.ID] = ts
	}
}

// observedInterval is the median gap between an instance's recent
// checkpoints: what the interval is in fact, tuner or not.
func (s *state) observedInterval(id string) time.Duration {
	ts := s.ckptByInst[id]
	if len(ts) < 2 {
		return 0
	}
	gaps := make([]time.Duration, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i].Sub(ts[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps[len(gaps)/2]
}

func (s *state) openRecovery(node string, t time.Time, suspect bool) *recovery {
	if r := s.latestRecovery(); r != nil && r.Node == node && !r.Completed && (suspect || r.Lost.IsZero()) {
		if suspect {
			r.Suspect = t
		}
		return r
	}
	r := &recovery{Node: node}
	if suspect {
		r.Suspect = t
	} else {
		r.Lost = t
	}
	if len(s.recoveries) >= maxRecoveries {
		s.recoveries = s.recoveries[1:]
	}
	s.recoveries = append(s.recoveries, r)
	return r
}

func (s *state) latestRecovery() *recovery {
	if len(s.recoveries) == 0 {
		return nil
	}
	return s.recoveries[len(s.recoveries)-1]
}

func (r *recovery) inst(id string) *instRecovery {
	for _, ir := range r.Insts {
		if ir.Instance == id {
			return ir
		}
	}
	ir := &instRecovery{Instance: id}
	r.Insts = append(r.Insts, ir)
	return ir
}

// allDone says whether every instance of the recovery has caught up. A
// source has no upstream to catch up from: it is done once restored.
func (r *recovery) allDone() bool {
	for _, ir := range r.Insts {
		if ir.Done.IsZero() && (ir.Restored.IsZero() || !strings.HasPrefix(ir.Instance, "source#")) {
			return false
		}
	}
	return len(r.Insts) > 0
}

// start is when the recovery began: suspicion, else loss.
func (r *recovery) start() time.Time {
	if !r.Suspect.IsZero() {
		return r.Suspect
	}
	return r.Lost
}

func (s *state) applyRecoveryPlaced(e events.Event, f events.RecoveryPlacedFields) {
	r := s.latestRecovery()
	if r == nil || r.Completed {
		r = s.openRecovery(firstNonEmpty(f.From, e.Node), e.Time, false)
	}
	if e.Instance == "" { // global rollback
		r.Global = true
		r.Ckpt = int(f.Checkpoint)
		r.Records = int64(f.Records)
		for _, ir := range r.Insts {
			ir.Placed = e.Time
		}
		return
	}
	in := s.inst(e.Instance)
	in.Node = e.Node
	in.Gen = in.Gen + 1
	if f.Gen != 0 {
		in.Gen = f.Gen
	}
	in.State = "restoring"
	ir := r.inst(in.ID)
	ir.Placed = e.Time
	ir.To = e.Node
}

func (s *state) applyTrim(e events.Event, f events.TrimFields) {
	to := instKey(f.To)
	slice := rangesText(f.Slice)
	key := instKey(e.Instance) + ">" + to + ">" + slice
	b, ok := s.backups[key]
	if !ok {
		b = &backupRow{Instance: instKey(e.Instance), To: to, Slice: slice}
		s.backups[key] = b
		s.backupOrder = append(s.backupOrder, key)
		sort.Strings(s.backupOrder)
	}
	b.Held = f.HeldBytes
	b.Freed += f.FreedBytes
	b.UpTo = int64(f.UpTo)
	b.Positions = f.Positions
	b.Trims++
	b.TrimTimes = appendBounded(b.TrimTimes, e.Time, 32)
	b.Last = e.Time
}

// trimRate is trims per second over the last 10 s before now.
func (b *backupRow) trimRate(now time.Time) float64 {
	n := 0
	for _, t := range b.TrimTimes {
		if now.Sub(t) <= 10*time.Second {
			n++
		}
	}
	return float64(n) / 10
}

func (s *state) applyRescale(e events.Event) {
	// What each step says: the operator, the parallelism before and
	// after (not a live move's instances), the moves, the bytes.
	var op string
	from, to, moves := -1, -1, -1
	bytes, pauseMs := int64(-1), -1.0
	switch f := e.Fields.(type) {
	case events.RescalePlannedFields:
		op, from, to, moves = f.Op, f.From, f.To, len(f.Moves)
		if f.Mode == "restart" {
			moves = f.MoveCount
		}
	case events.RescaleStagedFields:
		op, bytes = f.Op, int64(f.Bytes)
	case events.RescaleCapturedFields:
		op, bytes = f.Op, int64(f.Bytes)
		if f.Mode == "restart" {
			from, to = f.FromN, f.ToN
		}
	case events.RescaleMovedFields:
		op = f.Op
	case events.RescaleReroutedFields:
		op, from, to = f.Op, f.From, f.To
	case events.RescaleDoneFields:
		op, from, to, bytes, pauseMs = f.Op, f.From, f.To, int64(f.Bytes), float64(f.PauseMs)
		if f.Mode != "restart" {
			moves = f.Moves
		}
	}
	phase := strings.TrimPrefix(string(e.Kind), "rescale_")
	var r *rescaleRow
	for i := len(s.rescales) - 1; i >= 0; i-- {
		if s.rescales[i].Op == op && !s.rescales[i].Done {
			r = s.rescales[i]
			break
		}
	}
	if r == nil || phase == "planned" {
		r = &rescaleRow{Op: op, Start: e.Time}
		if len(s.rescales) >= maxRescales {
			s.rescales = s.rescales[1:]
		}
		s.rescales = append(s.rescales, r)
	}
	r.Phase, r.Update = phase, e.Time
	r.Phases = append(r.Phases, phaseMark{Name: phase, At: e.Time})
	if from >= 0 {
		r.From = from
	}
	if to >= 0 {
		r.To = to
	}
	if moves >= 0 {
		r.Moves = moves
	}
	if bytes >= 0 {
		r.Bytes = bytes
	}
	if pauseMs >= 0 {
		r.PauseMs = pauseMs
	}
	if phase == "done" {
		r.Done = true
	}
}

func (s *state) applyMetrics(e events.Event, f events.MetricsFields) {
	bl := float64(f.Backlog)
	if e.Instance != "" {
		in := s.inst(e.Instance)
		in.InRate, in.OutRate = f.InRate, f.OutRate
		in.Backlog, in.HasRates = bl, true
		in.Pressure = f.Backpressure
		if in.Pressure == "" {
			in.Pressure = pressure(bl)
		}
		if e.Node == "" {
			return
		}
	}
	if e.Node == "" {
		return
	}
	n := s.node(e.Node)
	if e.Instance == "" {
		n.CPU, n.RSS = f.CPU, float64(f.RSS)
	}
	n.InRate, n.OutRate = f.InRate, f.OutRate
	n.Backlog, n.HasMetrics = bl, true
}

// pressure classifies a backlog (records queued at an instance's input).
func pressure(backlog float64) string {
	switch {
	case backlog < 1000:
		return "OK"
	case backlog < 10000:
		return "LOW"
	}
	return "HIGH"
}

// appendBounded appends x to xs and keeps the last n. It slides the
// slice's window along its array instead of moving n-1 elements down at
// every append; append moves them into a new array once the old one is
// used up, about every n/4 appends. A state's slices are never shared
// (clone copies them), so the array is xs's alone.
func appendBounded[T any](xs []T, x T, n int) []T {
	if len(xs) >= n {
		xs = xs[len(xs)-n+1:]
	}
	return append(xs, x)
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, " ,;:"); i >= 0 {
		return s[:i]
	}
	return s
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

func atoiSafe(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return n
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// lessID orders n2 before n10.
func lessID(a, b string) bool {
	ta, na := splitNum(a)
	tb, nb := splitNum(b)
	if ta != tb {
		return ta < tb
	}
	return na < nb
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	return s[:i], atoiSafe(s[i:])
}
