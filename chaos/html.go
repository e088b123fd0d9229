package chaos

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
)

// WriteHTML writes r as one self-contained page: inline CSS and SVG, no
// script, nothing fetched. It shows the verdict, throughput and latency
// over time with the fault windows shaded, a checkpoint Gantt per
// instance and the recovery timeline. The page is well-formed XML (it is
// tested by parsing it).
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

func esc(s string) string { return html.EscapeString(s) }

const css = `body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{margin-bottom:0}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.verdict{font-size:2.2em;font-weight:bold;padding:.3em .8em;border-radius:8px;display:inline-block;margin:.4em 0}
.pass{background:#d9f2dc;color:#135c1c}.fail{background:#fadbd8;color:#8c1c13}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#135c1c;font-weight:bold}.bad{color:#8c1c13;font-weight:bold}
svg{display:block;margin:.5em 0;background:#fff}
svg text{font:11px system-ui,sans-serif;fill:#444}
.axis{stroke:#999;stroke-width:1}.grid{stroke:#eee;stroke-width:1}
.fault{fill:#f5b041;fill-opacity:.25}.faultlabel{fill:#a0522d}
.in{fill:none;stroke:#2e86c1;stroke-width:1.5}.out{fill:none;stroke:#28b463;stroke-width:1.5}
.lag{fill:none;stroke:#8e44ad;stroke-width:1.5}
.capture{fill:#1f618d}.persist-full{fill:#5dade2}.persist-delta{fill:#aed6f1}
.detect{fill:#f5b041}.place{fill:#e74c3c}.restore{fill:#8e44ad}.catch_up{fill:#2e86c1}.unrecovered,.lost_again{fill:#7b241c}
.muted{color:#777}`

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
	cls, word := "fail", "FAIL"
	if r.Verdict == VerdictPass {
		cls, word = "pass", "PASS"
	}
	p.f("<div class=\"verdict %s\" id=\"verdict\">%s</div>\n", cls, word)
	p.f("<p>%d results expected: <b>%d lost</b>, <b>%d duplicated</b>, <b>%d wrong</b>; %d records read",
		r.Windows, r.Lost, r.Duplicated, r.Wrong, r.Records)
	if len(r.LostInstances) > 0 {
		p.f("; instances lost: %s", esc(strings.Join(r.LostInstances, ", ")))
	}
	p.f(".</p>\n")

	p.f("<h2>Checks</h2>\n<table><tr><th>check</th><th>result</th><th>observed (limit)</th></tr>\n")
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
	p.f("<h2>Checkpoints</h2>\n")
	p.checkpoints()
	p.f("<h2>Faults</h2>\n")
	p.faults()
	if len(r.Notes) > 0 {
		p.f("<h2>Notes</h2>\n<ul>\n")
		for _, n := range r.Notes {
			p.f("<li>%s</li>\n", esc(n))
		}
		p.f("</ul>\n")
	}
	p.f("</body></html>\n")
}

func secs(msv float64) string { return fmt.Sprintf("%.1fs", msv/1000) }

// plot maps job time (ms) and a value onto an SVG area.
type plot struct {
	w, h             float64 // whole SVG
	left, right, top float64
	bottom           float64
	t1               float64 // ms at the right edge
	y1               float64 // value at the top
}

func newPlot(h, t1, y1 float64) plot {
	if t1 <= 0 {
		t1 = 1000
	}
	if y1 <= 0 {
		y1 = 1
	}
	return plot{w: 1000, h: h, left: 70, right: 20, top: 10, bottom: 30, t1: t1, y1: y1}
}

func (c plot) x(msv float64) float64 {
	msv = math.Max(0, math.Min(msv, c.t1))
	return c.left + msv/c.t1*(c.w-c.left-c.right)
}

func (c plot) y(v float64) float64 {
	v = math.Max(0, math.Min(v, c.y1))
	return c.h - c.bottom - v/c.y1*(c.h-c.top-c.bottom)
}

// niceStep is a round tick step giving about n ticks over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// frame opens an SVG with axes, time ticks and the fault windows shaded;
// the caller draws into it and closes it.
func (p *page) frame(c plot, id, ylabel string, yfmt func(float64) string) {
	p.f("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" role=\"img\">\n", id, c.w, c.h)
	p.shadeFaults(c)
	if yfmt != nil {
		step := niceStep(c.y1, 4)
		for v := 0.0; v <= c.y1*1.0001; v += step {
			p.f("<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", c.left, c.w-c.right, c.y(v), c.y(v))
			p.f("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", c.left-4, c.y(v)+4, esc(yfmt(v)))
		}
		p.f("<text x=\"12\" y=\"%.1f\" transform=\"rotate(-90 12 %.1f)\" text-anchor=\"middle\">%s</text>\n", c.h/2, c.h/2, esc(ylabel))
	}
	p.timeAxis(c)
}

func (p *page) timeAxis(c plot) {
	base := c.h - c.bottom
	p.f("<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", c.left, c.w-c.right, base, base)
	step := niceStep(c.t1/1000, 10) * 1000
	for t := 0.0; t <= c.t1*1.0001; t += step {
		p.f("<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", c.x(t), c.x(t), base, base+4)
		p.f("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%gs</text>\n", c.x(t), base+16, t/1000)
	}
}

func (p *page) shadeFaults(c plot) {
	for _, f := range p.r.Faults {
		x0, x1 := c.x(f.StartMs), c.x(f.EndMs)
		if x1-x0 < 2 {
			x1 = x0 + 2 // an instant fault (a kill) is a thin band
		}
		p.f("<rect class=\"fault\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s</title></rect>",
			x0, c.top, x1-x0, c.h-c.top-c.bottom, esc(faultText(f)))
		p.f("<text class=\"faultlabel\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", x0+2, c.top+10, esc(f.Verb))
	}
}

func faultText(f FaultSpan) string {
	s := fmt.Sprintf("%s %s %s..%s", f.Verb, f.Target, secs(f.StartMs), secs(f.EndMs))
	if len(f.Nodes) > 0 {
		s += " on " + strings.Join(f.Nodes, ",")
	}
	return s
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case v >= 1e3:
		return fmt.Sprintf("%gk", math.Round(v/1e2)/10)
	}
	return fmt.Sprintf("%g", math.Round(v*10)/10)
}

func (p *page) line(c plot, class string, xs, ys []float64) {
	if len(xs) == 0 {
		return
	}
	var pts strings.Builder
	for i := range xs {
		fmt.Fprintf(&pts, "%.1f,%.1f ", c.x(xs[i]), c.y(ys[i]))
	}
	p.f("<polyline class=\"%s\" points=\"%s\"/>\n", class, strings.TrimSpace(pts.String()))
}

func (p *page) throughput() {
	r := p.r
	if len(r.Series.Throughput) == 0 {
		p.f("<p class=\"muted\">no throughput samples</p>\n")
		return
	}
	var top float64
	var xs, in, out []float64
	for _, s := range r.Series.Throughput {
		xs, in, out = append(xs, s.Ms), append(in, s.InRps), append(out, s.OutRps)
		top = math.Max(top, math.Max(s.InRps, s.OutRps))
	}
	c := newPlot(240, r.DurationMs, top*1.1)
	p.frame(c, "throughput", "records/s", human)
	p.line(c, "in", xs, in)
	p.line(c, "out", xs, out)
	p.f("</svg>\n")
	t := r.Throughput
	p.f("<p><span style=\"color:#2e86c1\">in</span> and <span style=\"color:#28b463\">out</span> (results) per second; faults shaded. Mean in %s/s (max %s/s), mean out %s/s, %s records/s over the job.</p>\n",
		human(t.MeanInRps), human(t.MaxInRps), human(t.MeanOutRps), human(t.RecordsPS))
}

func (p *page) lag() {
	r := p.r
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
	c := newPlot(200, r.DurationMs, top*1.1)
	p.frame(c, "lag", "lag (ms)", func(v float64) string { return fmt.Sprintf("%gms", math.Round(v)) })
	p.line(c, "lag", xs, ys)
	p.f("</svg>\n")
	l := r.Latency
	p.f("<p>Output lag: p50 %gms, p99 %gms, max %gms over %d samples.</p>\n", l.P50Ms, l.P99Ms, l.MaxMs, l.Samples)
}

// rows draws a labelled row per name; spans gives each row's bars.
func (p *page) rowsFrame(id string, names []string, rowH float64) plot {
	c := newPlot(float64(len(names))*rowH+40, p.r.DurationMs, 1)
	c.left = 120
	p.f("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" role=\"img\">\n", id, c.w, c.h)
	p.shadeFaults(c)
	for i, n := range names {
		y := c.top + float64(i)*rowH
		p.f("<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", c.left, c.w-c.right, y+rowH, y+rowH)
		p.f("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", c.left-6, y+rowH/2+4, esc(n))
	}
	p.timeAxis(c)
	return c
}

func (p *page) recoveries() {
	r := p.r
	if len(r.Recoveries) == 0 {
		p.f("<p class=\"muted\">no node was lost</p>\n")
		return
	}
	const rowH = 22.0
	var names []string
	for _, rc := range r.Recoveries {
		names = append(names, rc.Instance+" ("+rc.From+")")
	}
	c := p.rowsFrame("recoveries", names, rowH)
	for i, rc := range r.Recoveries {
		y := c.top + float64(i)*rowH + 4
		for _, ph := range rc.Phases {
			x0, x1 := c.x(ph.StartMs), c.x(ph.EndMs)
			p.f("<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s %s: %.0fms</title></rect>",
				esc(ph.Name), x0, y, math.Max(x1-x0, 1.5), rowH-8, esc(rc.Instance), esc(ph.Name), ph.EndMs-ph.StartMs)
		}
		p.f("\n")
	}
	p.f("</svg>\n<p>Phases: <span style=\"color:#f5b041\">detect</span> (fault to detection), <span style=\"color:#e74c3c\">place</span>, <span style=\"color:#8e44ad\">restore</span>, <span style=\"color:#2e86c1\">catch up</span> (replay until the upstreams' watermark); dark red: never recovered.</p>\n")
	p.f("<table><tr><th>instance</th><th>lost node</th><th>to</th><th>detected</th><th>checkpoint</th><th>replayed</th><th>total</th><th>phases</th></tr>\n")
	for _, rc := range r.Recoveries {
		total := fmt.Sprintf("%.0fms", rc.TotalMs)
		switch {
		case rc.Superseded:
			total = fmt.Sprintf("%.0fms, then lost again", rc.TotalMs)
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
}

func (p *page) checkpoints() {
	r := p.r
	st := r.Checkpoints
	p.f("<p>%d checkpoints (%d full, %d delta), %s raw, %s stored. Capture p50 %.0fµs p99 %.0fµs; persist p50 %.0fµs p99 %.0fµs; total p50 %.0fµs p99 %.0fµs.</p>\n",
		st.Count, st.Full, st.Delta, bytesText(st.RawBytes), bytesText(st.StoredBytes),
		st.CaptureUs.P50, st.CaptureUs.P99, st.PersistUs.P50, st.PersistUs.P99, st.TotalUs.P50, st.TotalUs.P99)
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
	c := p.rowsFrame("checkpoints", names, rowH)
	for _, s := range r.Series.Checkpoints {
		y := c.top + float64(row[s.Instance])*rowH + 3
		x0, xc, x1 := c.x(s.StartMs), c.x(s.CaptureMs), c.x(s.EndMs)
		kind := "persist-delta"
		if s.Full {
			kind = "persist-full"
		}
		p.f("<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s checkpoint %d: %.1fms</title></rect>",
			kind, x0, y, math.Max(x1-x0, 1.5), rowH-6, esc(s.Instance), s.ID, s.EndMs-s.StartMs)
		p.f("<rect class=\"capture\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", x0, y, math.Max(xc-x0, 0.5), rowH-6)
	}
	p.f("</svg>\n<p>Per instance: dark, the capture (processing waits); light, the persist (in the background); full checkpoints darker than deltas.</p>\n")
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func (p *page) faults() {
	r := p.r
	if len(r.Faults) == 0 && len(r.Actions) == 0 {
		p.f("<p class=\"muted\">no faults</p>\n")
		return
	}
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
