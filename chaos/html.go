package chaos

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"spate/internal/human"
	"spate/plot"
)

// WriteHTML writes r as one self-contained page: inline CSS and SVG, no
// script, nothing fetched. It shows the verdict and what the oracle
// checked, the checks, throughput and output lag over time with the fault
// windows shaded and the checks' limits drawn, every recovery on the
// job's time axis and then each one zoomed on its own with its phases,
// each loss of a node (the first three) as a space-time diagram, a
// checkpoint Gantt per instance, checkpoint durations and sizes over
// time, the upstream backups' memory and spills, the interval decisions,
// the rescale steps and the faults. Each section opens with a sentence or
// two saying what it shows and how to read it. The page is well-formed
// XML (it is tested by parsing it).
func WriteHTML(w io.Writer, r *Report) error {
	var b strings.Builder
	h := &page{b: &b, r: r}
	h.write()
	_, err := io.WriteString(w, b.String())
	return err
}

type page struct {
	b *strings.Builder
	r *Report
}

func (p *page) f(format string, args ...any) { fmt.Fprintf(p.b, format, args...) }

// svg hands a finished canvas to the page.
func (p *page) svg(c *plot.Canvas) { p.b.WriteString(c.String()) }

func esc(s string) string { return plot.Esc(s) }

// chartW is the user width of every chart: they scale to the page.
const chartW = 1000

const css = `body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{margin-bottom:0}h2{margin-top:1.6em;border-bottom:1px solid #ddd}h3{margin:1.2em 0 .2em;font-size:1em}
.lead{color:#333;background:#f7f9fb;border-left:3px solid #aed6f1;padding:.4em .8em}
.verdict{font-size:2.2em;font-weight:bold;padding:.3em .8em;border-radius:8px;display:inline-block;margin:.4em 0}
.pass{background:#d9f2dc;color:#135c1c}.fail{background:#fadbd8;color:#8c1c13}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#135c1c;font-weight:bold}.bad{color:#8c1c13;font-weight:bold}
` + plot.CSS + `
.fault{fill:#f5b041;fill-opacity:.25}.faultlabel{fill:#a0522d}
.rescale{stroke:#117a65;stroke-width:1;stroke-dasharray:2 3}.rescalelabel{fill:#117a65}
.in{fill:none;stroke:#2e86c1;stroke-width:1.5}.out{fill:none;stroke:#28b463;stroke-width:1.5}
.lag{fill:none;stroke:#8e44ad;stroke-width:1.5}
.capture{fill:#1f618d}.persist-full{fill:#5dade2}.persist-delta{fill:#aed6f1}
.dot-full{fill:#1f618d}.dot-delta{fill:#85c1e9}.dot-global{fill:#884ea0}
.detect{fill:#f5b041}.place{fill:#e74c3c}.restore{fill:#8e44ad}.catch_up{fill:#2e86c1}.unrecovered,.lost_again{fill:#7b241c}
.step{fill:#117a65}.spill{fill:#e67e22}.full{fill:#c0392b}
.muted{color:#777}` + spacetimeCSS

// palette colours the lines of one series per instance.
var palette = []string{"#2e86c1", "#e67e22", "#28b463", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#d4ac0d", "#34495e", "#e84393"}

func color(i int) string { return palette[i%len(palette)] }

func (p *page) lead(format string, args ...any) {
	p.f("<p class=\"lead\">"+format+"</p>\n", args...)
}

func (p *page) write() {
	r := p.r
	title := r.Scenario
	if title == "" {
		title = "run " + r.Run
	}
	p.f("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>%s: %s</title><style>%s</style></head><body>\n", esc(title), esc(r.Verdict), css)
	p.f("<h1>%s</h1>\n<p class=\"muted\">run %s, --ft %s, %s of job time", esc(title), esc(r.Run), esc(r.FT), secs(r.DurationMs))
	if r.File != "" {
		p.f(", scenario %s", esc(r.File))
	}
	p.f("</p>\n")
	if r.Break != "" {
		p.f("<p class=\"bad\"><b>BROKEN ON PURPOSE: %s</b>: this run's protocol had a mechanism deliberately wrong (spate up --break list), so its checks are meant to fail</p>\n", esc(r.Break))
	}
	p.verdict()

	p.f("<h2>Checks</h2>\n")
	p.lead("Each check is a rule the run had to keep: its name with its limit as written in the scenario (a plain run has only exactly_once), what was observed, and whether it held. The verdict is a pass only if every check passed. Limits with a unit are also drawn as dashed red lines on the charts below.")
	p.f("<table><tr><th>check</th><th>result</th><th>observed (limit)</th></tr>\n")
	for _, c := range r.Checks {
		res := "<span class=\"ok\">pass</span>"
		if !c.Pass {
			res = "<span class=\"bad\">FAIL</span>"
		}
		p.f("<tr><td>%s</td><td>%s</td><td>%s</td></tr>\n", esc(c.Name), res, esc(c.Detail))
	}
	p.f("</table>\n")

	p.f("<h2>Throughput</h2>\n")
	p.throughput()
	p.f("<h2>Output lag</h2>\n")
	p.lag()
	p.f("<h2>Recoveries</h2>\n")
	p.recoveries()
	p.f("<h2>Space-time diagrams</h2>\n")
	p.spacetime()
	p.f("<h2>Checkpoints</h2>\n")
	p.checkpoints()
	p.f("<h2>Upstream backup</h2>\n")
	p.backup()
	p.f("<h2>Checkpoint intervals</h2>\n")
	p.intervals()
	p.f("<h2>Rescales</h2>\n")
	p.rescales()
	p.f("<h2>Faults</h2>\n")
	p.faults()
	if len(r.Notes) > 0 {
		p.f("<h2>Notes</h2>\n")
		p.lead("Errors the cluster reported and remarks of the tool that wrote this page, in the order they happened.")
		p.f("<ul>\n")
		for _, n := range r.Notes {
			p.f("<li>%s</li>\n", esc(n))
		}
		p.f("</ul>\n")
	}
	p.f("</body></html>\n")
}

func (p *page) verdict() {
	r := p.r
	cls, word := "fail", "FAIL"
	if r.Verdict == VerdictPass {
		cls, word = "pass", "PASS"
	}
	p.f("<div class=\"verdict %s\" id=\"verdict\">%s</div>\n", cls, word)
	p.lead("What the oracle checked: after the run, the same job was computed again in one process, with no cluster, no faults and no checkpoints, over exactly the records the sources read (their final positions are in run.json). Every result it expects (one per operator, key and window) was looked for in the sinks' committed output: <b>lost</b> means expected but never written, <b>duplicated</b> written more than once, <b>wrong</b> written with other values or not expected at all. Exactly-once holds when all three are zero.")
	p.f("<p>%d results expected: <b>%d lost</b>, <b>%d duplicated</b>, <b>%d wrong</b>; %d records read",
		r.Windows, r.Lost, r.Duplicated, r.Wrong, r.Records)
	if len(r.LostInstances) > 0 {
		p.f("; instances lost: %s", esc(strings.Join(r.LostInstances, ", ")))
	}
	p.f(".</p>\n")
}

func secs(msv float64) string { return fmt.Sprintf("%.1fs", msv/1000) }

// jobFrame is a chart over the job's whole time.
func (p *page) jobFrame(h, y1 float64) plot.Frame {
	if y1 <= 0 {
		y1 = 1
	}
	t1 := p.r.DurationMs
	if t1 <= 0 {
		t1 = 1000
	}
	return plot.NewFrame(chartW, h, 0, t1, 0, y1)
}

// open starts a job-time chart: the fault windows shaded, the rescales
// marked, the value axis labelled by yfmt (in round steps of bytes if
// bytes) and the time axis.
func (p *page) open(c *plot.Canvas, fr plot.Frame, id, ylabel string, yfmt func(float64) string, bytes bool) {
	c.Begin(id, fr.W, fr.H, "")
	p.shadeFaults(c, fr)
	p.markRescales(c, fr)
	if bytes {
		fr.YAxisStep(c, plot.ByteStep(fr.Y1-fr.Y0, 4), ylabel, yfmt)
	} else {
		fr.YAxis(c, 4, ylabel, yfmt)
	}
	fr.XAxis(c, 10, plot.Seconds)
}

func (p *page) shadeFaults(c *plot.Canvas, fr plot.Frame) {
	for _, f := range p.r.Faults {
		if f.EndMs < fr.X0 || f.StartMs > fr.X1 {
			continue
		}
		// An instant fault (a kill) is a thin band.
		fr.Band(c, f.StartMs, f.EndMs, 2, `class="fault"`, faultText(f))
		c.Text(fr.X(f.StartMs)+2, fr.Top+10, `class="faultlabel"`, f.Verb)
	}
}

func (p *page) markRescales(c *plot.Canvas, fr plot.Frame) {
	for _, rs := range p.r.Rescales {
		if rs.PlannedMs < fr.X0 || rs.PlannedMs > fr.X1 {
			continue
		}
		x := fr.X(rs.PlannedMs)
		c.Line(x, fr.Top, x, fr.Base(), `class="rescale"`)
		c.Text(x+2, fr.Base()-4, `class="rescalelabel"`, fmt.Sprintf("%s %d→%d", rs.Op, rs.From, rs.To))
	}
}

func faultText(f FaultSpan) string {
	s := fmt.Sprintf("%s %s %s..%s", f.Verb, f.Target, secs(f.StartMs), secs(f.EndMs))
	if len(f.Nodes) > 0 {
		s += " on " + strings.Join(f.Nodes, ",")
	}
	return s
}

func tick(v float64) string { return plot.Human(v) }

func (p *page) throughput() {
	r := p.r
	p.lead("Records read by the sources (<span style=\"color:#2e86c1\">in</span>) and results written by the sinks (<span style=\"color:#28b463\">out</span>) per second, one sample a second. Shaded bands are faults, dotted green lines rescales. Out is bursty: results leave when a window closes, so the line jumps at each window's end; a fall of in during a fault is the job slowed down or held back.")
	if len(r.Series.Throughput) == 0 {
		p.f("<p class=\"muted\">no throughput samples</p>\n")
		return
	}
	var topIn, topOut float64
	var xs, in, out []float64
	for _, s := range r.Series.Throughput {
		xs, in, out = append(xs, s.Ms), append(in, s.InRps), append(out, s.OutRps)
		topIn, topOut = math.Max(topIn, s.InRps), math.Max(topOut, s.OutRps)
	}
	lim, label, hasLim := r.limit(CheckMinThroughput)
	if hasLim {
		topIn = math.Max(topIn, lim)
	}
	// In and out get a panel each: out is bursty and often far below in,
	// and on a shared axis it would read as a flat line at zero.
	var c plot.Canvas
	fr := p.jobFrame(180, topIn*1.1)
	p.open(&c, fr, "throughput-in", "in (records/s)", tick, false)
	fr.Series(&c, xs, in, `class="in"`)
	if hasLim {
		fr.Limit(&c, lim, label)
	}
	c.End()
	p.svg(&c)
	var co plot.Canvas
	fo := p.jobFrame(180, topOut*1.1)
	p.open(&co, fo, "throughput-out", "out (results/s)", tick, false)
	fo.Series(&co, xs, out, `class="out"`)
	co.End()
	p.svg(&co)
	t := r.Throughput
	p.f("<p>Mean in %s/s (max %s/s), mean out %s/s, %s records/s over the job.</p>\n",
		human.Count(t.MeanInRps), human.Count(t.MaxInRps), human.Count(t.MeanOutRps), human.Count(t.RecordsPS))
}

func (p *page) lag() {
	r := p.r
	p.lead("How far the output is behind the input: for each sample, the time since the sources read the records whose results the sinks have just written. It rises a little at every window's end (a window's results wait for its watermark) and a lot while a failed instance is being recovered; back at its usual level, the job has caught up.")
	if len(r.Series.Lag) == 0 {
		p.f("<p class=\"muted\">no lag samples (only a paced run measures output lag)</p>\n")
		return
	}
	var top float64
	var xs, ys []float64
	for _, s := range r.Series.Lag {
		xs, ys = append(xs, s[0]), append(ys, s[1])
		top = math.Max(top, s[1])
	}
	lim, label, hasLim := r.limit(CheckMaxLag)
	if hasLim && lim < 3*top {
		top = math.Max(top, lim)
	}
	var c plot.Canvas
	fr := p.jobFrame(200, top*1.1)
	p.open(&c, fr, "lag", "lag (ms)", plot.Millis, false)
	fr.Series(&c, xs, ys, `class="lag"`)
	if hasLim {
		fr.Limit(&c, lim, label)
	}
	c.End()
	p.svg(&c)
	l := r.Latency
	p.f("<p>Output lag: p50 %s, p99 %s, max %s over %s.</p>\n", msText(l.P50Ms), msText(l.P99Ms), msText(l.MaxMs), human.Plural(l.Samples, "sample"))
}

// rowsFrame opens a job-time chart with a labelled row per name.
func (p *page) rowsFrame(c *plot.Canvas, id string, names []string, rowH float64, x0, x1 float64) plot.Frame {
	fr := plot.NewFrame(chartW, float64(len(names))*rowH+40, x0, x1, 0, 1)
	fr.Left = 140
	c.Begin(id, fr.W, fr.H, "")
	p.shadeFaults(c, fr)
	for i, n := range names {
		y := fr.Top + float64(i)*rowH
		c.Line(fr.Left, y+rowH, fr.W-fr.Right, y+rowH, `class="grid"`)
		c.Text(fr.Left-6, y+rowH/2+4, `text-anchor="end"`, n)
	}
	return fr
}

const phaseText = `Phases: <span style="color:#f5b041">detect</span>, from the fault that caused the loss to the coordinator noticing it (missed heartbeats or a closed connection); <span style="color:#e74c3c">place</span>, choosing a node for the lost instance and sending it there under a new generation (older ones are fenced off); <span style="color:#8e44ad">restore</span>, loading its last complete checkpoint (a full one and the deltas after it); <span style="color:#2e86c1">catch up</span>, the upstreams replaying from their backups what it had not checkpointed, until it reaches their watermark. Dark red: lost again before it caught up, or never recovered. With --ft global there is one recovery of the whole job ("job"): every instance rolls back to the last global checkpoint.`

func (p *page) recoveries() {
	r := p.r
	if len(r.Recoveries) == 0 {
		p.f("<p class=\"muted\">no node was lost</p>\n")
		return
	}
	p.lead("Each instance lost with a node, from the fault to the moment it had caught up with its upstreams, so that the rest of the job no longer waited for it. The first chart puts them on the job's time axis; below it, each recovery is drawn again on its own axis, in milliseconds from its detection, so that a 200 ms recovery is as readable as a 5 s one. The table gives the same figures.")
	p.f("<p>%s</p>\n", phaseText)
	const rowH = 22.0
	var names []string
	for _, rc := range r.Recoveries {
		names = append(names, rc.Instance+" ("+rc.From+")")
	}
	var c plot.Canvas
	fr := p.rowsFrame(&c, "recoveries", names, rowH, 0, math.Max(r.DurationMs, 1))
	for i, rc := range r.Recoveries {
		y := fr.Top + float64(i)*rowH + 4
		for _, ph := range rc.Phases {
			x0, x1 := fr.X(ph.StartMs), fr.X(ph.EndMs)
			c.Rect(x0, y, math.Max(x1-x0, 1.5), rowH-8, fmt.Sprintf(`class="%s"`, esc(ph.Name)), fmt.Sprintf("%s %s: %.0fms", rc.Instance, ph.Name, ph.EndMs-ph.StartMs))
		}
		c.Printf("\n")
	}
	fr.XAxis(&c, 10, plot.Seconds)
	c.End()
	p.svg(&c)
	p.f("<table><tr><th>instance</th><th>lost node</th><th>to</th><th>detected</th><th>checkpoint</th><th>replayed</th><th>total</th><th>phases</th></tr>\n")
	for _, rc := range r.Recoveries {
		total := msText(rc.TotalMs)
		switch {
		case rc.Superseded:
			total = msText(rc.TotalMs) + ", then lost again"
		case !rc.Done:
			total = "<span class=\"bad\">never</span>"
		}
		var phases []string
		for _, ph := range rc.Phases {
			phases = append(phases, fmt.Sprintf("%s %.0fms", ph.Name, ph.EndMs-ph.StartMs))
		}
		cp := fmt.Sprint(rc.Checkpoint)
		if rc.Fellback {
			cp += " (fallback)"
		}
		p.f("<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%d</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
			esc(rc.Instance), esc(rc.From), esc(rc.To), secs(rc.DetectedMs), esc(cp), rc.Replayed, total, esc(strings.Join(phases, ", ")))
	}
	p.f("</table>\n")
	p.zooms()
}

// zooms draws each recovery on its own time axis, in ms from its
// detection, with the max_recovery limit as a vertical line.
func (p *page) zooms() {
	r := p.r
	lim, label, hasLim := r.limit(CheckMaxRecovery)
	for i, rc := range r.Recoveries {
		lo, hi := 0.0, rc.TotalMs
		for _, ph := range rc.Phases {
			lo, hi = math.Min(lo, ph.StartMs-rc.DetectedMs), math.Max(hi, ph.EndMs-rc.DetectedMs)
		}
		if hasLim && lim <= 2*hi {
			hi = math.Max(hi, lim)
		}
		span := math.Max(hi-lo, 1)
		lo, hi = lo-span*0.05, hi+span*0.08
		p.f("<h3>%s, lost with %s at %s</h3>\n", esc(rc.Instance), esc(rc.From), secs(rc.DetectedMs))
		const rowH = 26.0
		var c plot.Canvas
		fr := plot.NewFrame(chartW, rowH+46, lo, hi, 0, 1)
		fr.Left = 140
		c.Begin(fmt.Sprintf("recovery-%d", i+1), fr.W, fr.H, "")
		y := fr.Top + 4
		c.Text(fr.Left-6, y+rowH/2, `text-anchor="end"`, rc.Instance)
		for _, ph := range rc.Phases {
			x0, x1 := fr.X(ph.StartMs-rc.DetectedMs), fr.X(ph.EndMs-rc.DetectedMs)
			d := ph.EndMs - ph.StartMs
			c.Rect(x0, y, math.Max(x1-x0, 1.5), rowH-6, fmt.Sprintf(`class="%s"`, esc(ph.Name)), fmt.Sprintf("%s: %s", ph.Name, msText(d)))
			if x1-x0 > 60 {
				c.Text((x0+x1)/2, y+rowH/2+2, `text-anchor="middle" style="fill:#fff"`, fmt.Sprintf("%s %s", strings.ReplaceAll(ph.Name, "_", " "), msText(d)))
			}
		}
		switch {
		case hasLim && lim <= hi:
			x := fr.X(lim)
			c.Line(x, fr.Top, x, fr.Base(), `class="limit"`)
			c.Text(x-4, fr.Base()-4, `class="limitlabel" text-anchor="end"`, label)
		case hasLim:
			c.Text(fr.W-fr.Right, fr.Base()-4, `class="limitlabel" text-anchor="end"`, fmt.Sprintf("%s: far to the right of this axis", label))
		}
		fr.XAxis(&c, 10, plot.Millis)
		c.End()
		p.svg(&c)
	}
}

func (p *page) checkpoints() {
	r := p.r
	st := r.Checkpoints
	p.lead("Every completed checkpoint of every instance. An instance stops processing only for the capture (dark: it copies what changed, copy-on-write); the persist (light) encodes, compresses and writes it in the background while processing goes on. A full checkpoint holds the instance's whole state, a delta only the keys changed since the one before. The charts below give each checkpoint's total time and its size as stored, one dot each.")
	p.f("<p>%d checkpoints (%d full, %d delta), %s raw, %s stored. Capture p50 %s p99 %s; persist p50 %s p99 %s; total p50 %s p99 %s.</p>\n",
		st.Count, st.Full, st.Delta, bytesText(st.RawBytes), bytesText(st.StoredBytes),
		usText(st.CaptureUs.P50), usText(st.CaptureUs.P99), usText(st.PersistUs.P50), usText(st.PersistUs.P99), usText(st.TotalUs.P50), usText(st.TotalUs.P99))
	if len(r.Series.Checkpoints) == 0 {
		return
	}
	seen := map[string]bool{}
	var names []string
	for _, s := range r.Series.Checkpoints {
		if !seen[s.Instance] {
			seen[s.Instance] = true
			names = append(names, s.Instance)
		}
	}
	sort.Strings(names)
	row := map[string]int{}
	for i, n := range names {
		row[n] = i
	}
	const rowH = 18.0
	var c plot.Canvas
	fr := p.rowsFrame(&c, "checkpoints", names, rowH, 0, math.Max(r.DurationMs, 1))
	for _, s := range r.Series.Checkpoints {
		y := fr.Top + float64(row[s.Instance])*rowH + 3
		x0, xc, x1 := fr.X(s.StartMs), fr.X(s.CaptureMs), fr.X(s.EndMs)
		kind := "persist-delta"
		if s.Full {
			kind = "persist-full"
		}
		c.Rect(x0, y, math.Max(x1-x0, 1.5), rowH-6, fmt.Sprintf(`class="%s"`, kind), fmt.Sprintf("%s checkpoint %d: %s", s.Instance, s.ID, msText(s.EndMs-s.StartMs)))
		c.Rect(x0, y, math.Max(xc-x0, 0.5), rowH-6, `class="capture"`, "")
		c.Printf("\n")
	}
	fr.XAxis(&c, 10, plot.Seconds)
	c.End()
	p.svg(&c)
	p.f("<p>Per instance: dark, the capture (processing waits); light, the persist (in the background); full checkpoints darker than deltas.</p>\n")
	p.checkpointDots("checkpoint-durations", "total time (ms)", func(s CheckpointSpan) float64 { return s.EndMs - s.StartMs }, plot.Millis, false, CheckMaxCheckpoint)
	var stored bool
	for _, s := range r.Series.Checkpoints {
		stored = stored || s.Bytes > 0
	}
	if stored {
		p.checkpointDots("checkpoint-bytes", "stored bytes", func(s CheckpointSpan) float64 { return float64(s.Bytes) }, plot.Bytes, true, "")
	}
	p.f("<p>Dots: <span style=\"color:#1f618d\">full</span>, <span style=\"color:#85c1e9\">delta</span>, <span style=\"color:#884ea0\">global</span> (--ft global: one per job, no sizes); the time of a dot is the checkpoint's completion.</p>\n")
}

func (p *page) checkpointDots(id, ylabel string, val func(CheckpointSpan) float64, yfmt func(float64) string, bytes bool, check string) {
	r := p.r
	var top float64
	for _, s := range r.Series.Checkpoints {
		top = math.Max(top, val(s))
	}
	lim, label, hasLim := 0.0, "", false
	if check != "" {
		lim, label, hasLim = r.limit(check)
		if hasLim && lim < 3*top {
			top = math.Max(top, lim)
		}
	}
	var c plot.Canvas
	fr := p.jobFrame(200, top*1.1)
	p.open(&c, fr, id, ylabel, yfmt, bytes)
	for _, s := range r.Series.Checkpoints {
		cls := "dot-delta"
		switch {
		case s.Instance == "global":
			cls = "dot-global"
		case s.Full:
			cls = "dot-full"
		}
		fr.Dots(&c, []float64{s.EndMs}, []float64{val(s)}, 2.5, fmt.Sprintf(`class="%s"`, cls),
			[]string{fmt.Sprintf("%s checkpoint %d: %s", s.Instance, s.ID, yfmt(val(s)))})
	}
	if hasLim {
		fr.Limit(&c, lim, label)
	}
	c.End()
	p.svg(&c)
}

// byInstance groups points by instance, in name order.
func byInstance[T any](pts []T, inst func(T) string) ([]string, map[string][]T) {
	m := map[string][]T{}
	for _, x := range pts {
		m[inst(x)] = append(m[inst(x)], x)
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, m
}

func (p *page) legend(names []string) {
	p.f("<p>")
	for i, n := range names {
		if i > 0 {
			p.f(", ")
		}
		p.f("<span style=\"color:%s\">%s</span>", color(i), esc(n))
	}
	p.f(".</p>\n")
}

func (p *page) backup() {
	r := p.r
	p.lead("What each instance keeps of what it sent (its upstream backup), so that a recovering downstream can be replayed to; it grows with the output and shrinks when the downstream's checkpoint covers it and the coordinator orders a trim. A line per instance: the bytes held (in memory and spilled to disk) after each trim or change. Orange dots: the backup started or stopped spilling to the run directory; red: it was full and the instance's input was paused (--backup-full block).")
	if len(r.Series.Backup) == 0 {
		p.f("<p class=\"muted\">no backup was trimmed or spilled (--ft spate only)</p>\n")
		return
	}
	names, by := byInstance(r.Series.Backup, func(b BackupPoint) string { return b.Instance })
	var top float64
	for _, b := range r.Series.Backup {
		top = math.Max(top, float64(b.Held))
	}
	var c plot.Canvas
	fr := p.jobFrame(220, top*1.1)
	p.open(&c, fr, "backup", "bytes held", plot.Bytes, true)
	var spills, fulls int
	for i, n := range names {
		var xs, ys []float64
		for _, b := range by[n] {
			if b.Kind == "unblocked" {
				continue
			}
			xs, ys = append(xs, b.Ms), append(ys, float64(b.Held))
		}
		fr.Steps(&c, xs, ys, fmt.Sprintf(`fill="none" stroke="%s" stroke-width="1.3"`, color(i)))
		for _, b := range by[n] {
			switch b.Kind {
			case "spill":
				spills++
				fr.Dots(&c, []float64{b.Ms}, []float64{float64(b.Held)}, 3.5, `class="spill"`,
					[]string{fmt.Sprintf("%s spilling %v: %s in memory, %s spilled", n, b.Spilling, plot.Bytes(float64(b.Mem)), plot.Bytes(float64(b.Spill)))})
			case "full":
				fulls++
				fr.Dots(&c, []float64{b.Ms}, []float64{float64(b.Held)}, 3.5, `class="full"`, []string{fmt.Sprintf("%s backup full: input paused", n)})
			case "unblocked":
				fulls++
				fr.Dots(&c, []float64{b.Ms}, []float64{0}, 3, `class="full"`, []string{fmt.Sprintf("%s input resumed after %s", n, msText(b.PausedMs))})
			}
		}
	}
	c.End()
	p.svg(&c)
	p.legend(names)
	p.f("<p>%d changes of spilling, %d pauses or resumes for a full backup. Between trims nothing reports the backup's size, so the line is flat there even while it grows.</p>\n", spills, fulls)
}

func (p *page) intervals() {
	r := p.r
	p.lead("The checkpoint interval of each instance over time. With --interval auto the tuner sets it from what it measures (input rate, checkpoint cost, failures) and each decision is a step here; with a fixed interval there is none. A shorter interval costs more checkpoints but leaves less to replay after a failure.")
	if len(r.Series.Intervals) == 0 {
		p.f("<p class=\"muted\">no interval decisions (a fixed --interval)</p>\n")
		return
	}
	names, by := byInstance(r.Series.Intervals, func(v IntervalPoint) string { return v.Instance })
	var top float64
	for _, v := range r.Series.Intervals {
		top = math.Max(top, v.IntervalMs)
	}
	var c plot.Canvas
	fr := p.jobFrame(220, top*1.1)
	p.open(&c, fr, "intervals", "interval", plot.Seconds, false)
	for i, n := range names {
		var xs, ys []float64
		var titles []string
		for _, v := range by[n] {
			xs, ys = append(xs, v.Ms), append(ys, v.IntervalMs)
			titles = append(titles, fmt.Sprintf("%s: %s", n, v.Reason))
		}
		fr.Steps(&c, xs, ys, fmt.Sprintf(`fill="none" stroke="%s" stroke-width="1.3"`, color(i)))
		fr.Dots(&c, xs, ys, 2.5, fmt.Sprintf(`fill="%s"`, color(i)), titles)
	}
	c.End()
	p.svg(&c)
	p.legend(names)
	p.f("<p>%d decisions; a dot's tooltip gives the tuner's reason.</p>\n", len(r.Series.Intervals))
}

func (p *page) rescales() {
	r := p.r
	if len(r.Rescales) == 0 {
		p.f("<p class=\"muted\">no rescale</p>\n")
		return
	}
	p.lead("Each change of an operator's parallelism, on its own row, step by step: <b>planned</b> (the new assignment of key groups), <b>staged</b> (a new owner pre-loaded a slice while the old one kept processing), <b>captured</b> (the old owner checkpointed the slice durably: the recovery point from now on), <b>moved</b> (the new owner loaded it), <b>rerouted</b> (the upstreams send by the new plan) and <b>done</b>. With --rescale restart the whole job checkpoints, stops and restarts instead.")
	var names []string
	for _, rs := range r.Rescales {
		names = append(names, fmt.Sprintf("%d: %s %d→%d", rs.ID, rs.Op, rs.From, rs.To))
	}
	const rowH = 24.0
	var c plot.Canvas
	fr := p.rowsFrame(&c, "rescales", names, rowH, 0, math.Max(r.DurationMs, 1))
	for i, rs := range r.Rescales {
		y := fr.Top + float64(i)*rowH + 4
		end := rs.DoneMs
		if end < 0 {
			end = r.DurationMs
		}
		c.Rect(fr.X(rs.PlannedMs), y+rowH/2-5, fr.X(end)-fr.X(rs.PlannedMs), 4, `fill="#a2d9ce"`, fmt.Sprintf("rescale %d: %s", rs.ID, msText(end-rs.PlannedMs)))
		for _, st := range rs.Steps {
			t := st.Name
			if st.Instance != "" {
				t += " " + st.Instance
			}
			if st.Range != "" {
				t += " " + st.Range
			}
			c.Circle(fr.X(st.Ms), y+rowH/2-3, 3, `class="step"`, fmt.Sprintf("%s at %s", t, secs(st.Ms)))
		}
		c.Printf("\n")
	}
	fr.XAxis(&c, 10, plot.Seconds)
	c.End()
	p.svg(&c)
	p.f("<table><tr><th>#</th><th>operator</th><th>mode</th><th>planned</th><th>took</th><th>longest pause</th><th>moved</th><th>steps</th></tr>\n")
	for _, rs := range r.Rescales {
		took := "<span class=\"bad\">never done</span>"
		if rs.DoneMs >= 0 {
			took = msText(rs.DoneMs - rs.PlannedMs)
		}
		var steps []string
		for _, st := range rs.Steps {
			steps = append(steps, fmt.Sprintf("%s +%s", st.Name, msText(st.Ms-rs.PlannedMs)))
		}
		p.f("<tr><td class=\"num\">%d</td><td>%s %d→%d</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%.0fms</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
			rs.ID, esc(rs.Op), rs.From, rs.To, esc(rs.Mode), secs(rs.PlannedMs), took, rs.PauseMs, bytesText(rs.Bytes), esc(strings.Join(steps, ", ")))
	}
	p.f("</table>\n")
}

func bytesText(n int64) string { return human.Bytes(float64(n)) }

// msText and usText give a duration in milliseconds or microseconds, as
// the report's series carry them, in the unit that fits (157 µs, 9.0 ms).
func msText(v float64) string { return human.Duration(time.Duration(v * float64(time.Millisecond))) }
func usText(v float64) string { return human.Duration(time.Duration(v * float64(time.Microsecond))) }

func (p *page) faults() {
	r := p.r
	if len(r.Faults) == 0 && len(r.Actions) == 0 {
		p.f("<p class=\"muted\">no faults</p>\n")
		return
	}
	p.lead("The faults injected, by command or by the scenario's schedule: what, on which nodes, from when to when (job time). An instant fault such as a kill starts and ends at once; its effect is in the recoveries above.")
	if len(r.Faults) > 0 {
		p.f("<table><tr><th>#</th><th>fault</th><th>target</th><th>nodes</th><th>arguments</th><th>from</th><th>to</th></tr>\n")
		for _, f := range r.Faults {
			var args []string
			for k, v := range f.Args {
				args = append(args, k+"="+v)
			}
			sort.Strings(args)
			end := secs(f.EndMs)
			if f.Open {
				end += " (run end)"
			}
			p.f("<tr><td class=\"num\">%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n",
				f.ID, esc(f.Verb), esc(f.Target), esc(strings.Join(f.Nodes, ", ")), esc(strings.Join(args, " ")), secs(f.StartMs), esc(end))
		}
		p.f("</table>\n")
	}
	if len(r.Actions) > 0 {
		p.f("<p>Actions sent by the scenario:</p>\n<table><tr><th>planned</th><th>sent</th><th>action</th><th>answer</th></tr>\n")
		for _, a := range r.Actions {
			ans := esc(a.Text)
			if !a.OK {
				ans = "<span class=\"bad\">refused</span>: " + ans
			}
			p.f("<tr><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td></tr>\n", secs(a.PlanMs), secs(a.AtMs), esc(a.Action), ans)
		}
		p.f("</table>\n")
	}
}
