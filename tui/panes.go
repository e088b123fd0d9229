package tui

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"spate/events"
	"spate/internal/human"
	"spate/spacetime"
)

// view is what a pane renders from: the state, the styles, the clock and
// the pane's selected row. Panes are plain structs: they keep nothing
// between frames and do no I/O.
type view struct {
	s      *state
	st     styles
	now    time.Time
	sel    int
	filter string
	log    []int            // the log entries the filter keeps (indexes into s.log)
	losses []spacetime.Loss // the spacetime pane's: the run's losses so far, oldest first
	cmp    *Comparison      // the spacetime pane's in spate tour: a comparison with its loss
	width  int              // the terminal's, for a detail screen
}

// pane is one screen of the dashboard.
type pane interface {
	name() string
	rows(v view) int                              // how many rows j/k move over
	render(v view, w, h int) []string             // exactly what fits in w x h
	detail(v view) (title string, lines []string) // enter
}

// The panes, in the order of their number keys.
var panes = []pane{
	clusterPane{}, dataflowPane{}, checkpointsPane{}, backupPane{},
	scalingPane{}, tunerPane{}, recoveryPane{}, chartsPane{}, logPane{},
	spacetimePane{},
}

const (
	paneCluster = iota
	paneDataflow
	paneCheckpoints
	paneBackup
	paneScaling
	paneTuner
	paneRecovery
	paneCharts
	paneLog
	paneSpacetime
)

// paneKey is the number key of pane i: 1 to 9, then 0.
func paneKey(i int) string { return itoa((i + 1) % 10) }

// ---- 1 cluster ----

type clusterPane struct{}

func (clusterPane) name() string    { return "cluster" }
func (clusterPane) rows(v view) int { return len(v.s.nodeOrder) }

func (clusterPane) render(v view, w, h int) []string {
	cols := []column{
		{Title: "NODE", W: 4}, {Title: "STATE", W: 11}, {Title: "PID", W: 7, Right: true, Drop: 3},
		{Title: "SINCE", W: 7, Drop: 5}, {Title: "INSTANCES", W: 16, Flex: true},
		{Title: "CPU", W: 5, Right: true, Drop: 4}, {Title: "RSS", W: 9, Right: true, Drop: 4},
		{Title: "IN/S", W: 6, Right: true, Drop: 6}, {Title: "OUT/S", W: 6, Right: true, Drop: 6},
		{Title: "LINKS", W: 15, Drop: 2},
	}
	rows := make([][]string, 0, len(v.s.nodeOrder))
	for _, id := range v.s.nodeOrder {
		n := v.s.nodes[id]
		cpu, rss, in, out := "-", "-", "-", "-"
		if n.HasMetrics {
			cpu = fmt.Sprintf("%.0f%%", n.CPU)
			rss = fmtBytes(int64(n.RSS))
			in, out = fmtRate(n.InRate), fmtRate(n.OutRate)
		}
		links := n.Addr
		if fs := v.s.nodeFaults(id); len(fs) > 0 {
			links = v.st.bad.Render(strings.Join(fs, ","))
		}
		if links == "" {
			links = "-"
		}
		pid := "-"
		if n.PID > 0 {
			pid = itoa(n.PID)
		}
		rows = append(rows, []string{id, v.st.stateStyle(n.State).Render(stateMark(n.State) + n.State), pid,
			fmtAgoShort(v.now, n.Since), strings.Join(v.s.nodeInsts(id), " "), cpu, rss, in, out, links})
	}
	lines := table(v.st, cols, rows, v.sel, w, h, false)
	return lines
}

// stateMark gives each state a glyph, so it reads without colour.
func stateMark(s string) string {
	switch s {
	case "alive", "running", "completed", "done":
		return "● "
	case "suspect", "restoring", "replaying", "joining", "spawned":
		return "◐ "
	case "paused":
		return "‖ "
	case "partitioned":
		return "⊘ "
	case "dead", "lost", "failed", "exited":
		return "✗ "
	case "stopped":
		return "○ "
	}
	return "· "
}

func fmtAgoShort(now, t time.Time) string {
	return strings.TrimSuffix(fmtAgo(now, t), " ago")
}

// nodeFaults names the open faults touching node.
func (s *state) nodeFaults(node string) []string {
	var out []string
	for _, f := range s.faults {
		if !f.End.IsZero() {
			continue
		}
		for _, n := range f.Nodes {
			if n == node {
				out = append(out, f.Verb)
			}
		}
	}
	return out
}

func (clusterPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.s.nodeOrder) {
		return "node", nil
	}
	id := v.s.nodeOrder[v.sel]
	n := v.s.nodes[id]
	lines := []string{
		"state      " + v.st.stateStyle(n.State).Render(n.State) + "  since " + fmtClock(n.Since),
		"pid        " + itoa(n.PID),
		"peers at   " + n.Addr,
		"faults     " + strings.Join(v.s.nodeFaults(id), ", "),
	}
	if n.HasMetrics {
		lines = append(lines, fmt.Sprintf("cpu %.0f%%  rss %s  in %s/s  out %s/s  backlog %.0f",
			n.CPU, fmtBytes(int64(n.RSS)), fmtRate(n.InRate), fmtRate(n.OutRate), n.Backlog))
	}
	lines = append(lines, "", v.st.title.Render("instances"))
	for _, k := range v.s.nodeInsts(id) {
		in := v.s.insts[k]
		lines = append(lines, fmt.Sprintf("  %-10s gen %d  %s  %s", k, in.Gen, in.State, in.KeyGroups))
	}
	lines = append(lines, "", v.st.title.Render("recent events"))
	lines = append(lines, v.s.recentFor(func(e events.Event) bool { return e.Node == id }, 20)...)
	return "node " + id, lines
}

// recentFor is the last n log lines that match keep, oldest first.
func (s *state) recentFor(keep func(events.Event) bool, n int) []string {
	var out []string
	for i := len(s.log) - 1; i >= 0 && len(out) < n; i-- {
		if keep(s.log[i].E) {
			out = append(out, "  "+s.log[i].E.Line())
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// ---- 2 dataflow ----

type dataflowPane struct{}

func (dataflowPane) name() string    { return "dataflow" }
func (dataflowPane) rows(v view) int { return len(v.s.instOrder) }

func (dataflowPane) render(v view, w, h int) []string {
	var chain []string
	for _, op := range v.s.opOrder {
		n := 0
		for _, in := range v.s.insts {
			if in.Op == op {
				n++
			}
		}
		chain = append(chain, fmt.Sprintf("%s ×%d", op, n))
	}
	head := v.st.title.Render("job " + v.s.job + ": ")
	if len(chain) == 0 {
		head += v.st.dim.Render("no instances placed yet")
	} else {
		head += strings.Join(chain, " → ")
	}
	cols := []column{
		{Title: "INSTANCE", W: 9}, {Title: "NODE", W: 4}, {Title: "GEN", W: 3, Right: true, Drop: 3},
		{Title: "KEY GROUPS", W: 10, Flex: true, Drop: 1}, {Title: "STATE", W: 10},
		{Title: "IN/S", W: 7, Right: true}, {Title: "OUT/S", W: 7, Right: true},
		{Title: "BACKLOG", W: 7, Right: true, Drop: 2}, {Title: "PRESSURE", W: 8},
		{Title: "CKPT", W: 4, Right: true, Drop: 4}, {Title: "INTERVAL", W: 8, Right: true, Drop: 5},
	}
	rows := make([][]string, 0, len(v.s.instOrder))
	for _, k := range v.s.instOrder {
		in := v.s.insts[k]
		inR, outR, bl, pr := "-", "-", "-", "-"
		if in.HasRates {
			inR, outR, bl = fmtRate(in.InRate), fmtRate(in.OutRate), fmtRate(in.Backlog)
			if in.Pressure != "" {
				pr = v.st.stateStyle(in.Pressure).Render(in.Pressure)
			}
		} else if in.State == "done" {
			inR, outR = "Σ"+fmtRate(in.In), "Σ"+fmtRate(in.Out)
		}
		iv := in.Interval
		if iv == 0 {
			iv = v.s.observedInterval(k)
		}
		ivs := "-"
		if iv > 0 {
			ivs = fmtDur(iv)
		}
		ck := "-"
		if in.LastCkpt > 0 {
			ck = itoa(in.LastCkpt)
		}
		rows = append(rows, []string{k, in.Node, fmt.Sprint(in.Gen), in.KeyGroups,
			v.st.stateStyle(in.State).Render(in.State), inR, outR, bl, pr, ck, ivs})
	}
	return append([]string{fit(head, w)}, table(v.st, cols, rows, v.sel, w, h-1, false)...)
}

func (dataflowPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.s.instOrder) {
		return "instance", nil
	}
	k := v.s.instOrder[v.sel]
	in := v.s.insts[k]
	lines := []string{
		"operator    " + in.Op,
		"node        " + in.Node,
		"generation  " + fmt.Sprint(in.Gen),
		"key groups  " + in.KeyGroups,
		"state       " + in.State,
		fmt.Sprintf("records     %s in, %s out (at drain)", fmtRate(in.In), fmtRate(in.Out)),
		"observed checkpoint interval " + fmtDur(v.s.observedInterval(k)),
		"", v.st.title.Render("recent events"),
	}
	lines = append(lines, v.s.recentFor(func(e events.Event) bool {
		return instKey(e.Instance) == k || instKey(towards(e)) == k
	}, 20)...)
	return "instance " + k, lines
}

// ---- 3 checkpoints ----

type checkpointsPane struct{}

func (checkpointsPane) name() string    { return "checkpoints" }
func (checkpointsPane) rows(v view) int { return len(v.s.ckpts) }

// ckptAt is the i-th checkpoint, newest first.
func (s *state) ckptAt(i int) *ckptRow { return s.ckpts[len(s.ckpts)-1-i] }

func (checkpointsPane) render(v view, w, h int) []string {
	s := v.s
	var done, full int
	var bytes int64
	for _, c := range s.ckpts {
		if c.Status == "completed" {
			done++
		}
		if c.Full {
			full++
		}
		bytes += c.Stored
	}
	head := fmt.Sprintf("%s (%d full, %d delta), %s stored", human.Plural(len(s.ckpts), "checkpoint"), full, len(s.ckpts)-full, fmtBytes(bytes))
	out := []string{v.st.title.Render(fit(head, w))}
	gantt := h >= 16 && len(s.ckptByInst) > 0
	tableH := h - 1
	var g []string
	if gantt {
		g = ganttLines(v, w, min(len(s.ckptByInst)+2, h/2))
		tableH -= len(g) + 1
	}
	cols := []column{
		{Title: "ID", W: 4, Right: true}, {Title: "INSTANCE", W: 9, Flex: true}, {Title: "TYPE", W: 5},
		{Title: "STATUS", W: 9}, {Title: "TRIGGERED", W: 12, Drop: 3}, {Title: "CAPTURE", W: 7, Right: true, Drop: 2},
		{Title: "PERSIST", W: 7, Right: true, Drop: 2}, {Title: "END2END", W: 7, Right: true},
		{Title: "RAW", W: 9, Right: true, Drop: 1}, {Title: "STORED", W: 9, Right: true},
	}
	rows := make([][]string, 0, len(s.ckpts))
	for i := range s.ckpts {
		c := s.ckptAt(i)
		typ := "delta"
		if c.Full {
			typ = "full"
		}
		raw := "-"
		if c.Raw > 0 {
			raw = fmtBytes(c.Raw)
		}
		cap, per := "-", "-"
		if c.Capture > 0 || c.Persist > 0 {
			cap, per = fmtDur(c.Capture), fmtDur(c.Persist)
		}
		stored := "-"
		if c.Stored > 0 {
			stored = fmtBytes(c.Stored)
		}
		rows = append(rows, []string{itoa(c.ID), c.Instance, typ, v.st.stateStyle(c.Status).Render(c.Status),
			fmtClock(c.Trigger), cap, per, fmtDur(c.Total), raw, stored})
	}
	out = append(out, table(v.st, cols, rows, v.sel, w, tableH, false)...)
	if gantt {
		out = append(block(out, w, h-len(g)-1), "")
		out = append(out, g...)
	}
	return out
}

// ganttLines draws the recent checkpoints per instance on a time axis: one
// column per 250 ms, █ a full checkpoint, ▌ a delta, bars as long as the
// checkpoint took.
func ganttLines(v view, w, h int) []string {
	s := v.s
	label := 10
	cols := w - label - 1
	if cols < 10 || h < 3 {
		return nil
	}
	step := 250 * time.Millisecond
	end := v.now
	start := end.Add(-time.Duration(cols) * step)
	insts := make([]string, 0, len(s.ckptByInst))
	for _, k := range s.instOrder {
		if len(s.ckptByInst[k]) > 0 {
			insts = append(insts, k)
		}
	}
	global := false
	for _, c := range s.ckpts {
		if c.Global {
			global = true
			break
		}
	}
	if global {
		insts = append([]string{"(global)"}, insts...)
	}
	if len(insts) > h-2 {
		insts = insts[:h-2]
	}
	grid := map[string][]rune{}
	for _, k := range insts {
		r := []rune(strings.Repeat("·", cols))
		grid[k] = r
	}
	for _, c := range s.ckpts {
		r, ok := grid[c.Instance]
		if !ok || c.End.Before(start) {
			continue
		}
		a := int(c.Trigger.Sub(start) / step)
		b := int(c.End.Sub(start) / step)
		mark := '▌'
		if c.Full {
			mark = '█'
		}
		if c.Status != "completed" {
			mark = 'x'
		}
		for i := max(a, 0); i <= b && i < cols; i++ {
			r[i] = mark
		}
	}
	out := []string{v.st.title.Render("recent checkpoints") + v.st.dim.Render(fmt.Sprintf("  (one cell = %s, █ full, ▌ delta, x failed)", fmtDur(step)))}
	for _, k := range insts {
		out = append(out, pad(k, label)+" "+v.st.bar.Render(string(grid[k])))
	}
	axis := pad("", label) + " " + pad(fmtClock(start), cols-12) + fmtClock(end)
	out = append(out, v.st.dim.Render(fit(axis, w)))
	return out
}

func (checkpointsPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.s.ckpts) {
		return "checkpoint", nil
	}
	c := v.s.ckptAt(v.sel)
	typ := "delta"
	if c.Full {
		typ = "full"
	}
	ratio := "-"
	if c.Raw > 0 {
		ratio = fmt.Sprintf("%.2f", float64(c.Stored)/float64(c.Raw))
	}
	return fmt.Sprintf("checkpoint %d of %s", c.ID, c.Instance), []string{
		"node         " + c.Node,
		"type         " + typ,
		"status       " + c.Status,
		"triggered    " + fmtClock(c.Trigger),
		"completed    " + fmtClock(c.End),
		"capture      " + fmtDur(c.Capture) + "   (copy-on-write, processing goes on)",
		"persist      " + fmtDur(c.Persist) + "   (encode, compress, checksum, write)",
		"end to end   " + fmtDur(c.Total),
		"keys         " + itoa(c.Keys),
		"size         " + fmtBytes(c.Raw) + " raw, " + fmtBytes(c.Stored) + " stored (ratio " + ratio + ")",
	}
}

// ---- 4 backup ----

type backupPane struct{}

func (backupPane) name() string    { return "backup" }
func (backupPane) rows(v view) int { return len(v.s.backupOrder) }

func (backupPane) render(v view, w, h int) []string {
	s := v.s
	var held, freed int64
	for _, b := range s.backups {
		held += b.Held
		freed += b.Freed
	}
	head := fmt.Sprintf("upstream backup: %s held, %s trimmed", fmtBytes(held), fmtBytes(freed))
	if n := sum(s.spills); n > 0 {
		head += ", " + human.Plural(n, "spill") + " to disk"
	}
	if n := sum(s.pauses); n > 0 {
		head += ", " + human.Plural(n, "input pause")
	}
	cols := []column{
		{Title: "UPSTREAM", W: 9}, {Title: "TOWARD", W: 9}, {Title: "SLICE", W: 9, Flex: true},
		{Title: "HELD", W: 9, Right: true}, {Title: "TRIMMED", W: 9, Right: true, Drop: 2},
		{Title: "UP TO", W: 6, Right: true}, {Title: "KGS", W: 4, Right: true, Drop: 3},
		{Title: "TRIMS", W: 5, Right: true, Drop: 4}, {Title: "TRIM/S", W: 6, Right: true},
		{Title: "LAST", W: 7, Drop: 1},
	}
	rows := make([][]string, 0, len(s.backupOrder))
	for _, k := range s.backupOrder {
		b := s.backups[k]
		rows = append(rows, []string{b.Instance, b.To, b.Slice, fmtBytes(b.Held), fmtBytes(b.Freed),
			fmt.Sprint(b.UpTo), itoa(b.Positions), itoa(b.Trims), fmt.Sprintf("%.1f", b.trimRate(v.now)),
			fmtAgoShort(v.now, b.Last)})
	}
	return append([]string{v.st.title.Render(fit(head, w))}, table(v.st, cols, rows, v.sel, w, h-1, false)...)
}

func (backupPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.s.backupOrder) {
		return "backup", nil
	}
	b := v.s.backups[v.s.backupOrder[v.sel]]
	lines := []string{
		"upstream     " + b.Instance,
		"toward       " + b.To,
		"slice        " + b.Slice,
		"held         " + fmtBytes(b.Held),
		"trimmed      " + fmtBytes(b.Freed) + " in " + itoa(b.Trims) + " trims",
		"trimmed to   position " + fmt.Sprint(b.UpTo),
		"spills       " + itoa(v.s.spills[b.Instance]),
		"full pauses  " + itoa(v.s.pauses[b.Instance]),
		"", v.st.title.Render("recent trims"),
	}
	lines = append(lines, v.s.recentFor(func(e events.Event) bool {
		f, ok := e.Fields.(events.TrimFields)
		return ok && instKey(e.Instance) == b.Instance && instKey(f.To) == b.To
	}, 15)...)
	return "backup " + b.Instance + " → " + b.To, lines
}

// ---- 5 scaling ----

type scalingPane struct{}

func (scalingPane) name() string    { return "scaling" }
func (scalingPane) rows(v view) int { return len(v.s.rescales) }

func (scalingPane) render(v view, w, h int) []string {
	s := v.s
	out := []string{v.st.title.Render("key groups per instance")}
	for _, op := range s.opOrder {
		var parts []string
		for _, k := range s.instOrder {
			in := s.insts[k]
			if in.Op == op && in.KeyGroups != "" {
				parts = append(parts, fmt.Sprintf("#%d@%s %s", in.Index, in.Node, in.KeyGroups))
			}
		}
		if len(parts) > 0 {
			out = append(out, fit("  "+pad(op, 8)+" "+strings.Join(parts, "  "), w))
		}
		if len(out) >= h/3 {
			break
		}
	}
	out = append(out, "", v.st.title.Render("rescales"))
	cols := []column{
		{Title: "OP", W: 8}, {Title: "FROM→TO", W: 7}, {Title: "PHASE", W: 9}, {Title: "MOVES", W: 5, Right: true},
		{Title: "BYTES", W: 9, Right: true, Drop: 2}, {Title: "PAUSE", W: 7, Right: true},
		{Title: "STARTED", W: 12, Drop: 3}, {Title: "TOOK", W: 7, Right: true, Drop: 1},
	}
	rows := make([][]string, 0, len(s.rescales))
	for i := len(s.rescales) - 1; i >= 0; i-- {
		r := s.rescales[i]
		took := "-"
		if r.Done {
			took = fmtDur(r.Update.Sub(r.Start))
		}
		phase := r.Phase
		if !r.Done {
			phase = v.st.warn.Render(phase)
		}
		rows = append(rows, []string{r.Op, fmt.Sprintf("%d→%d", r.From, r.To), phase, itoa(r.Moves),
			fmtBytes(r.Bytes), fmtMs(r.PauseMs), fmtClock(r.Start), took})
	}
	autoH := 0
	if len(s.autoscales) > 0 || h >= 16 {
		autoH = min(len(s.autoscales)+2, (h-len(out))/2)
		autoH = max(autoH, 2)
	}
	out = append(out, table(v.st, cols, rows, v.sel, w, max(h-len(out)-autoH-1, 2), false)...)
	if autoH > 0 {
		out = append(out, "", v.st.title.Render("auto-scaler decisions"))
		if len(s.autoscales) == 0 {
			out = append(out, v.st.dim.Render("  none yet"))
		}
		for i := len(s.autoscales) - 1; i >= 0 && len(out) < h; i-- {
			a := s.autoscales[i]
			out = append(out, fit(fmt.Sprintf("  %s  %-8s %d→%d  %s", fmtClock(a.At), a.Op, a.From, a.To, a.Reason), w))
		}
	}
	return out
}

func (scalingPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.s.rescales) {
		return "rescale", nil
	}
	r := v.s.rescales[len(v.s.rescales)-1-v.sel]
	lines := []string{
		fmt.Sprintf("operator %s: %d → %d instances", r.Op, r.From, r.To),
		fmt.Sprintf("%s moved, %s, paused %s", human.Plural(r.Moves, "slice"), fmtBytes(r.Bytes), fmtMs(r.PauseMs)),
		"", v.st.title.Render("phases"),
	}
	for _, p := range r.Phases {
		lines = append(lines, fmt.Sprintf("  %s  +%-8s %s", fmtClock(p.At), fmtDur(p.At.Sub(r.Start)), p.Name))
	}
	return "rescale of " + r.Op, lines
}

// ---- 6 tuner ----

type tunerPane struct{}

func (tunerPane) name() string { return "tuner" }

// tunerInsts lists the instances the tuner pane shows: those with interval
// decisions, else every instance that checkpoints (observed intervals).
func (s *state) tunerInsts() []string {
	if len(s.tunerOrder) > 0 {
		return s.tunerOrder
	}
	var out []string
	for _, k := range s.instOrder {
		if len(s.ckptByInst[k]) > 0 {
			out = append(out, k)
		}
	}
	return out
}

func (tunerPane) rows(v view) int { return len(v.s.tunerInsts()) }

func (tunerPane) render(v view, w, h int) []string {
	s := v.s
	ids := s.tunerInsts()
	cols := []column{
		{Title: "INSTANCE", W: 9}, {Title: "INTERVAL", W: 8, Right: true}, {Title: "SOURCE", W: 8, Drop: 2},
		{Title: "DECIDED", W: 12, Drop: 1}, {Title: "REASON", W: 12, Flex: true},
	}
	rows := make([][]string, 0, len(ids))
	for _, k := range ids {
		if t, ok := s.tuner[k]; ok {
			rows = append(rows, []string{k, fmtDur(t.Interval), "tuner", fmtClock(t.At), t.Reason})
		} else {
			rows = append(rows, []string{k, fmtDur(s.observedInterval(k)), "observed", "-", v.st.dim.Render("no tuner decisions: the gap between checkpoints")})
		}
	}
	mode := "DOCI online controller"
	if len(s.tunerOrder) == 0 {
		mode = "no interval decisions yet (fixed interval, or the tuner is off)"
	}
	out := []string{v.st.title.Render(fit("interval tuner: "+mode, w))}
	th := min(len(rows)+2, h-1)
	if h >= 14 {
		th = min(th, h/2)
	}
	out = append(out, table(v.st, cols, rows, v.sel, w, th, false)...)
	if v.sel >= 0 && v.sel < len(ids) && h-len(out) >= 5 {
		out = append(out, "")
		out = append(out, tunerChart(v, ids[v.sel], w, h-len(out))...)
	}
	return out
}

// tunerChart is the selected instance's interval over time against the
// load (records in per second), on the same time axis, plus the inputs of
// the last decision.
func tunerChart(v view, id string, w, h int) []string {
	s := v.s
	label := 10
	cols := w - label - 1
	if cols < 10 {
		return nil
	}
	step := time.Second
	start := v.now.Add(-time.Duration(cols) * step)
	ivals := make([]float64, cols)
	loads := make([]float64, cols)
	if t, ok := s.tuner[id]; ok {
		j := 0
		cur := 0.0
		for c := 0; c < cols; c++ {
			end := start.Add(time.Duration(c+1) * step)
			for j < len(t.Points) && !t.Points[j].At.After(end) {
				cur = float64(t.Points[j].Interval)
				j++
			}
			ivals[c] = cur
		}
	} else {
		ts := s.ckptByInst[id]
		for i := 1; i < len(ts); i++ {
			c := int(ts[i].Sub(start) / step)
			if c >= 0 && c < cols {
				ivals[c] = float64(ts[i].Sub(ts[i-1]))
			}
		}
	}
	for _, p := range s.tput {
		c := int(p.At.Sub(start) / step)
		if c >= 0 && c < cols {
			loads[c] = p.In
		}
	}
	out := []string{v.st.title.Render(id) + v.st.dim.Render(fmt.Sprintf("  last %s, one cell = %s", fmtDur(time.Duration(cols)*step), fmtDur(step)))}
	out = append(out, pad("interval", label)+" "+v.st.bar.Render(spark(ivals)))
	out = append(out, pad("load in/s", label)+" "+v.st.bar2.Render(spark(loads)))
	if t, ok := s.tuner[id]; ok && t.Inputs != (events.IntervalInputs{}) {
		out = append(out, fit("inputs     "+inputsText(t.Inputs), w))
		out = append(out, fit("reason     "+t.Reason, w))
	}
	if len(out) > h {
		out = out[:h]
	}
	return out
}

func (tunerPane) detail(v view) (string, []string) {
	ids := v.s.tunerInsts()
	if v.sel < 0 || v.sel >= len(ids) {
		return "tuner", nil
	}
	id := ids[v.sel]
	lines := []string{}
	if t, ok := v.s.tuner[id]; ok {
		for i := len(t.Points) - 1; i >= 0 && len(lines) < 30; i-- {
			lines = append(lines, fmt.Sprintf("  %s  %s", fmtClock(t.Points[i].At), fmtDur(t.Points[i].Interval)))
		}
		lines = append([]string{"reason  " + t.Reason, "inputs  " + inputsText(t.Inputs), "", v.st.title.Render("decisions, newest first")}, lines...)
	} else {
		lines = append(lines, "no tuner decisions; observed interval "+fmtDur(v.s.observedInterval(id)))
	}
	return "interval of " + id, lines
}

// ---- 7 recovery ----

type recoveryPane struct{}

func (recoveryPane) name() string    { return "recovery" }
func (recoveryPane) rows(v view) int { return len(v.s.recoveries) }

func (recoveryPane) render(v view, w, h int) []string {
	s := v.s
	cols := []column{
		{Title: "#", W: 2, Right: true}, {Title: "NODE", W: 4}, {Title: "MODE", W: 6},
		{Title: "LOST AT", W: 12, Drop: 2}, {Title: "FROM", W: 5, Right: true, Drop: 3},
		{Title: "RESTORE", W: 7, Right: true}, {Title: "CATCH-UP", W: 8, Right: true},
		{Title: "TOTAL", W: 7, Right: true}, {Title: "INSTANCES", W: 10, Flex: true, Drop: 1},
	}
	rows := make([][]string, 0, len(s.recoveries))
	for i := len(s.recoveries) - 1; i >= 0; i-- {
		r := s.recoveries[i]
		mode := "local"
		if r.Global {
			mode = "global"
		}
		restore, catch, total := r.phaseTimes()
		ids := make([]string, 0, len(r.Insts))
		for _, ir := range r.Insts {
			ids = append(ids, ir.Instance)
		}
		tot := fmtMs(total)
		if !r.Completed {
			tot = v.st.warn.Render("running")
		}
		from := "-"
		if r.Ckpt > 0 {
			from = "ck " + itoa(r.Ckpt)
		} else if len(r.Insts) > 0 && r.Insts[0].Ckpt > 0 {
			from = "ck " + itoa(r.Insts[0].Ckpt)
		}
		rows = append(rows, []string{itoa(i + 1), r.Node, mode, fmtClock(r.start()), from, fmtMs(restore), fmtMs(catch), tot, strings.Join(ids, " ")})
	}
	th := min(len(rows)+2, h)
	if h >= 12 {
		th = min(th, h/2)
	}
	out := table(v.st, cols, rows, v.sel, w, th, false)
	if v.sel >= 0 && v.sel < len(s.recoveries) && h-len(out) >= 4 {
		out = append(out, "")
		out = append(out, recoveryTimeline(v, s.recoveries[len(s.recoveries)-1-v.sel], w, h-len(out))...)
	}
	return out
}

// phaseTimes sums a recovery's phases in ms: restore (lost to restored),
// catch-up (restored to caught up), total.
func (r *recovery) phaseTimes() (restore, catch, total float64) {
	for _, ir := range r.Insts {
		if ir.TotalMs > 0 {
			restore = max(restore, ir.RestoreMs)
			catch = max(catch, ir.CatchUpMs)
			total = max(total, ir.TotalMs)
		}
	}
	if total == 0 && !r.Restored.IsZero() {
		restore = ms(r.Restored.Sub(r.start()))
		total = ms(r.Done.Sub(r.start()))
	}
	if total == 0 && !r.Done.IsZero() {
		total = ms(r.Done.Sub(r.start()))
	}
	return
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// recoveryTimeline draws each instance's phases from the start of the
// recovery: s suspect, d detect to placement, r restore, c replay and
// catch-up. The glyphs carry the meaning, the colours only help.
func recoveryTimeline(v view, r *recovery, w, h int) []string {
	label := 11
	cols := w - label - 1
	t0 := r.start()
	end := r.Done
	for _, ir := range r.Insts {
		if ir.Done.After(end) {
			end = ir.Done
		}
		if ir.Restored.After(end) {
			end = ir.Restored
		}
	}
	if end.IsZero() || !end.After(t0) {
		end = v.now
	}
	span := end.Sub(t0)
	if span <= 0 || cols < 10 {
		return nil
	}
	col := func(t time.Time) int {
		if t.IsZero() {
			return -1
		}
		c := int(float64(t.Sub(t0)) / float64(span) * float64(cols-1))
		return min(max(c, 0), cols-1)
	}
	out := []string{v.st.title.Render("timeline") + v.st.dim.Render(fmt.Sprintf("  %s from %s; ░ detect and place, ▒ restore, █ replay and catch-up", fmtDur(span), fmtClock(t0)))}
	lostC := col(r.Lost)
	for _, ir := range r.Insts {
		if len(out) >= h-1 {
			break
		}
		row := []rune(strings.Repeat(" ", cols))
		placed := ir.Placed
		if placed.IsZero() {
			placed = r.Lost
		}
		a, b, c, d := 0, col(placed), col(ir.Restored), col(ir.Done)
		if r.Global && ir.Restored.IsZero() {
			c = col(r.Restored)
		}
		fill := func(from, to int, ch rune) {
			for i := max(from, 0); i <= to && i < cols; i++ {
				row[i] = ch
			}
		}
		fill(a, b, '░')
		if c >= 0 {
			fill(max(b, 1), max(c, 1), '▒')
		}
		if d >= 0 && c >= 0 {
			fill(c+1, d, '█')
		}
		if lostC >= 0 && row[lostC] == ' ' {
			row[lostC] = '|'
		}
		out = append(out, pad(ir.Instance, label)+" "+v.st.bar.Render(string(row)))
	}
	axis := pad("", label) + " " + pad("0", cols-len(fmtDur(span))) + fmtDur(span)
	out = append(out, v.st.dim.Render(fit(axis, w)))
	return out
}

func (recoveryPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.s.recoveries) {
		return "recovery", nil
	}
	r := v.s.recoveries[len(v.s.recoveries)-1-v.sel]
	lines := []string{
		"node lost   " + r.Node + " at " + fmtClock(r.Lost) + "  (" + r.Reason + ")",
	}
	if !r.Suspect.IsZero() {
		lines = append(lines, "suspected   "+fmtClock(r.Suspect))
	}
	if r.Global {
		lines = append(lines, fmt.Sprintf("global rollback to checkpoint %d, %s read again", r.Ckpt, human.PluralCount(float64(r.Records), "record")))
	}
	lines = append(lines, "", v.st.title.Render("instances"))
	for _, ir := range r.Insts {
		fb := ""
		if ir.Fellback {
			fb = " (fell back to the previous checkpoint)"
		}
		lines = append(lines, fmt.Sprintf("  %-10s → %-3s from checkpoint %d%s; replayed %d; restore %s, catch-up %s, total %s",
			ir.Instance, ir.To, ir.Ckpt, fb, ir.Replayed, fmtMs(ir.RestoreMs), fmtMs(ir.CatchUpMs), fmtMs(ir.TotalMs)))
	}
	lines = append(lines, "")
	lines = append(lines, recoveryTimeline(v, r, 100, 20)...)
	return "recovery of " + r.Node, lines
}

// ---- 8 charts ----

type chartsPane struct{}

func (chartsPane) name() string    { return "charts" }
func (chartsPane) rows(v view) int { return len(v.s.faults) }

// chartStep is the time one chart column covers: a second, or less when
// the whole run is shorter than the chart, so a short run fills it.
func (s *state) chartStep(now time.Time, cols int) time.Duration {
	step := time.Second
	if span := now.Sub(s.first); !s.first.IsZero() && cols > 0 && span < time.Duration(cols)*step {
		step = max(span/time.Duration(cols), 50*time.Millisecond)
	}
	return step
}

// series samples the throughput into cols columns of step ending at now
// (each column shows the latest sample at or before its end, up to 2 s
// old; NaN where there is none), and marks the columns inside a fault
// window.
func (s *state) series(now time.Time, cols int, step time.Duration) (in, out, lag []float64, shade []bool) {
	in, out, lag = make([]float64, cols), make([]float64, cols), make([]float64, cols)
	shade = make([]bool, cols)
	start := now.Add(-time.Duration(cols) * step)
	j := 0
	for c := 0; c < cols; c++ {
		end := start.Add(time.Duration(c+1) * step)
		for j < len(s.tput) && !s.tput[j].At.After(end) {
			j++
		}
		in[c], out[c], lag[c] = math.NaN(), math.NaN(), math.NaN()
		if j > 0 {
			if p := s.tput[j-1]; end.Sub(p.At) <= 2*time.Second {
				in[c], out[c], lag[c] = p.In, p.Out, p.Lag
			}
		}
	}
	for _, f := range s.faults {
		fe := f.End
		if fe.IsZero() {
			fe = now
		}
		a := int(f.Start.Sub(start) / step)
		b := int(fe.Sub(start) / step)
		for c := max(a, 0); c <= b && c < cols; c++ {
			shade[c] = true
		}
	}
	return
}

// charts renders the throughput (input and output rates overlaid) and the
// output lag as line charts over the same time axis, h lines in all; side
// by side when w allows, else one above the other. Each has a title with
// the latest figures, a value axis, its plot, a row of checkpoint and
// recovery marks and the time axis with clock labels; on few lines the
// labels go first, then the marks.
func charts(v view, w, h int) []string {
	if h < 4 || w < 30 {
		return nil
	}
	pair := w >= 100
	cw, each := w, h
	if !pair {
		each = (h - 1) / 2
	}
	if pair {
		cw = (w - 3) / 2
	}
	if each < 4 {
		return nil
	}
	if v.s.first.IsZero() {
		// Nothing folded yet (spate view at its start): no time axis of
		// a minute before the run.
		return []string{fit(v.st.dim.Render("throughput and output lag: no events yet"), w)}
	}
	const label = 7
	cols := cw - label
	step := v.s.chartStep(v.now, cols)
	start := v.now.Add(-time.Duration(cols) * step)
	in, out, lag, shade := v.s.series(v.now, cols, step)
	marks := v.s.marks(start, step, cols)
	axis, times := timeAxis(v.st, start, step, shade)
	lastIn, lastOut, lastLag := 0.0, 0.0, 0.0
	if n := len(v.s.tput); n > 0 {
		p := v.s.tput[n-1]
		lastIn, lastOut, lastLag = p.In, p.Out, p.Lag
	}
	// The rows under a plot: marks and clock labels when there is room.
	// Stacked, the upper chart leaves them to the lower one: it is the
	// same time axis.
	layoutRows := func(under bool) (rows int, withMarks, withTimes bool) {
		rows = each - 2 // the title and the axis
		if !under {
			return rows, false, false
		}
		if withTimes = rows >= 5; withTimes {
			rows--
		}
		if withMarks = rows >= 4; withMarks {
			rows--
		}
		return rows, withMarks, withTimes
	}
	mk := func(title string, ls []line, unit func(float64) string, under, legend bool) []string {
		rows, withMarks, withTimes := layoutRows(under)
		if withMarks && legend {
			title += v.st.dim.Render("  marks: " + marksLegend) // explained where it is drawn
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, l := range ls {
			for _, x := range l.vals {
				if !math.IsNaN(x) {
					lo, hi = math.Min(lo, x), math.Max(hi, x)
				}
			}
		}
		if math.IsInf(lo, 1) {
			lo, hi = 0, 0
		}
		lo, hi, stepV := niceRange(lo, hi, 4)
		res := []string{fit(title, cw)}
		// As many rows as put every step of the value axis on a row of
		// its own; the rest stay blank above.
		if k := int(math.Round((hi - lo) / stepV)); k > 0 && rows-1 >= k {
			fitted := (rows-1)/k*k + 1
			for ; rows > fitted; rows-- {
				res = append(res, "")
			}
		}
		labels := valueLabels(lo, hi, stepV, rows, label-1, unit)
		for i, p := range plot(v.st, ls, shade, rows, lo, hi) {
			res = append(res, v.st.dim.Render(labels[i])+" "+p)
		}
		if withMarks {
			res = append(res, padLeft(v.st.dim.Render("marks"), label-1)+" "+v.st.warn.Render(string(marks)))
		}
		res = append(res, strings.Repeat(" ", label)+axis)
		if withTimes {
			res = append(res, strings.Repeat(" ", label)+times)
		}
		return block(res, cw, each)
	}
	inLine := line{vals: in, g: lightLine, style: v.st.bar}
	outLine := line{vals: out, g: heavyLine, style: v.st.bar2}
	tpTitle := v.st.title.Render("throughput") + "  " + v.st.bar.Render("─") + " in " + fmtRate(lastIn) + "/s  " +
		v.st.bar2.Render("━") + " out " + fmtRate(lastOut) + "/s" + v.st.dim.Render("  (a column is "+fmtDur(step)+")")
	tp := mk(tpTitle, []line{inLine, outLine}, fmtRate, pair, false)
	lt := mk(v.st.title.Render("output lag")+"  "+v.st.bar.Render("─")+" "+fmtMs(lastLag), []line{{vals: lag, g: lightLine, style: v.st.bar}}, fmtMs, true, true)
	if pair {
		return sideBySide(tp, lt, v.st.dim.Render(" │ "))
	}
	res := append(tp, "")
	return append(res, lt...)
}

func (chartsPane) render(v view, w, h int) []string {
	head := v.st.title.Render("throughput and latency") + v.st.dim.Render("  "+human.Plural(len(v.s.faults), "fault"))
	out := []string{fit(head, w)}
	ch := h - 1
	fl := 0
	if h >= 16 {
		fl = min(len(v.s.faults)+2, h/4)
		ch -= fl + 1
	}
	out = append(out, charts(v, w, ch)...)
	if fl > 0 {
		out = append(out, "")
		cols := []column{
			{Title: "FAULT", W: 10}, {Title: "VERB", W: 9}, {Title: "TARGET", W: 9}, {Title: "NODES", W: 10, Flex: true},
			{Title: "STARTED", W: 12}, {Title: "ENDED", W: 12, Drop: 1},
		}
		rows := make([][]string, 0, len(v.s.faults))
		for i := len(v.s.faults) - 1; i >= 0; i-- {
			f := v.s.faults[i]
			end := v.st.warn.Render("active")
			if !f.End.IsZero() {
				end = fmtClock(f.End)
			}
			verb := f.Verb
			if f.Implicit {
				verb += "*"
			}
			id := f.ID
			if f.Implicit {
				id = "-"
			}
			rows = append(rows, []string{id, verb, f.Target, strings.Join(f.Nodes, " "), fmtClock(f.Start), end})
		}
		out = append(out, table(v.st, cols, rows, v.sel, w, fl, false)...)
	}
	return out
}

func (chartsPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.s.faults) {
		return "fault", nil
	}
	f := v.s.faults[len(v.s.faults)-1-v.sel]
	lines := []string{
		"verb     " + f.Verb, "target   " + f.Target, "nodes    " + strings.Join(f.Nodes, " "),
		"args     " + f.Args, "started  " + fmtClock(f.Start), "ended    " + fmtClock(f.End),
	}
	if f.Implicit {
		lines = append(lines, "", "* a node lost without a fault through the API (killed by hand, or crashed);", "  the window ends when its recovery completes")
	}
	return "fault " + f.ID, lines
}

// ---- 9 log ----

type logPane struct{}

func (logPane) name() string    { return "log" }
func (logPane) rows(v view) int { return len(v.log) }

func (logPane) render(v view, w, h int) []string {
	out := []string{}
	title := fmt.Sprintf("event log: %d events", len(v.s.log))
	if v.filter != "" {
		title = fmt.Sprintf("event log: %d of %d match /%s", len(v.log), len(v.s.log), v.filter)
	}
	if v.sel < 0 {
		title += v.st.dim.Render("  (following; j/k to stop, G to follow)")
	}
	out = append(out, v.st.title.Render(fit(title, w)))
	body := h - 1
	first := 0
	if v.sel >= 0 {
		if v.sel >= body {
			first = v.sel - body + 1
		}
	} else if len(v.log) > body {
		first = len(v.log) - body
	}
	for i := first; i < len(v.log) && i < first+body; i++ {
		le := v.s.log[v.log[i]]
		line := "  " + fit(logLine(v.st, le), w-2)
		if i == v.sel {
			line = "▸ " + v.st.sel.Render(ansiStrip(fit(logLine(v.st, le), w-2)))
		}
		out = append(out, line)
	}
	if len(v.log) == 0 {
		out = append(out, v.st.dim.Render("(no events"+map[bool]string{true: " match", false: " yet"}[v.filter != ""]+")"))
	}
	return out
}

func logLine(st styles, le logEntry) string {
	l := le.E.Line()
	switch {
	case le.Bad:
		return st.bad.Render(l)
	case le.Local:
		return st.key.Render(l)
	case le.E.Kind == events.NodeLost || le.E.Kind == events.NodeSuspect || le.E.Kind == events.FaultStarted:
		return st.warn.Render(l)
	case strings.HasPrefix(string(le.E.Kind), "recovery_"):
		return st.ok.Render(l)
	}
	return l
}

func (logPane) detail(v view) (string, []string) {
	if v.sel < 0 || v.sel >= len(v.log) {
		return "event", nil
	}
	e := v.s.log[v.log[v.sel]].E
	lines := []string{
		"seq       " + fmt.Sprint(e.Seq),
		"time      " + e.Time.Format(time.RFC3339Nano),
		"kind      " + string(e.Kind),
		"node      " + e.Node,
		"instance  " + e.Instance,
		"text      " + e.Text,
		"", v.st.title.Render("fields"),
	}
	fields := events.FieldMap(e.Fields)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("  %-14s %s", k, text(fields[k])))
	}
	return "event " + fmt.Sprint(e.Seq), lines
}

// filterLog keeps the entries whose line contains every word of filter
// (case-insensitive).
func filterLog(s *state, filter string) []int {
	words := strings.Fields(strings.ToLower(filter))
	out := make([]int, 0, len(s.log))
	for i, le := range s.log {
		if len(words) > 0 {
			l := strings.ToLower(le.E.Line())
			ok := true
			for _, w := range words {
				if !strings.Contains(l, w) {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
		}
		out = append(out, i)
	}
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}
