package tuner

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
)

// The --plot SVG: efficiency per policy as bars, and doci-online's chosen
// interval over time against the load. Hand-written SVG, deterministic.

const (
	plotW      = 960
	plotH      = 730
	plotLeft   = 120
	plotRight  = 80
	barTop     = 60
	barH       = 26
	lineTop    = 400
	lineBottom = 660
	plotPoints = 720
)

var plotColors = []string{"#c0392b", "#e67e22", "#f1c40f", "#7f8c8d", "#95a5a6", "#2980b9", "#27ae60"}

func writePlot(path string, sim *Sim, ld *Load, results []*Result) error {
	var b bytes.Buffer
	renderPlot(&b, sim, ld, results)
	if err := writeFile(path, b.Bytes()); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

func renderPlot(b *bytes.Buffer, sim *Sim, ld *Load, results []*Result) {
	pr := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pr(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	pr(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	pr(`<text x="%d" y="28" font-size="16" font-weight="bold">spate tuner sim: %s</text>`+"\n", plotLeft, html.EscapeString(ld.Spec))
	pr(`<text x="%d" y="46" fill="#555">failures %s, %d instances, %d failures</text>`+"\n", plotLeft, html.EscapeString(sim.sc.Failures.Spec), sim.sc.Instances, sim.FailureCount())

	// Bars: efficiency from lo to 100%.
	effs := make([]float64, len(results))
	for i, r := range results {
		effs[i] = r.Efficiency()
	}
	lo := math.Floor(slices.Min(effs)*20)/20 - 0.05 // a 5% step below the worst
	lo = max(0, lo)
	x0, x1 := float64(plotLeft), float64(plotW-plotRight-120)
	xs := func(e float64) float64 { return x0 + (e-lo)/(1-lo)*(x1-x0) }
	for i, r := range results {
		y := barTop + 10 + i*(barH+8)
		pr(`<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", plotLeft-8, y+barH/2+4, html.EscapeString(r.Policy))
		pr(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y, max(1, xs(effs[i])-x0), barH, plotColors[i%len(plotColors)])
		pr(`<text x="%.1f" y="%d">%.3f%%</text>`+"\n", xs(effs[i])+6, y+barH/2+4, 100*effs[i])
	}
	axisY := barTop + 10 + len(results)*(barH+8)
	pr(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`+"\n", x0, axisY, x1, axisY)
	for k := 0; k <= 4; k++ {
		e := lo + (1-lo)*float64(k)/4
		pr(`<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.1f%%</text>`+"\n", xs(e), axisY+16, 100*e)
	}
	pr(`<text x="%.1f" y="%d" fill="#555">efficiency (useful / (useful + waste))</text>`+"\n", x0, axisY+34)

	renderTimeline(b, sim, ld, results)
	pr("</svg>\n")
}

func renderTimeline(b *bytes.Buffer, sim *Sim, ld *Load, results []*Result) {
	pr := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var on *Result
	var static []*Result
	for _, r := range results {
		switch {
		case r.Policy == PolicyOnline:
			on = r
		case r.Policy == PolicyYoung || r.Policy == PolicyDOCI:
			static = append(static, r)
		}
	}
	x0, x1 := float64(plotLeft), float64(plotW-plotRight)
	y0, y1 := float64(lineBottom), float64(lineTop)
	n := len(ld.Counts)
	per := max(1, (n+plotPoints-1)/plotPoints)
	var load []float64
	for i := 0; i < n; i += per {
		j := min(i+per, n)
		var s float64
		for _, c := range ld.Counts[i:j] {
			s += c
		}
		load = append(load, s/float64(j-i))
	}
	top := slices.Max(load)
	if top <= 0 {
		top = 1
	}
	xt := func(sec float64) float64 { return x0 + sec/float64(n)*(x1-x0) }
	// Load: filled area, right axis.
	pr(`<path fill="#d6eaf8" stroke="none" d="M%.1f %.1f`, x0, y0)
	for k, v := range load {
		pr(` L%.1f %.1f`, xt(float64(k*per)), y0-v/top*(y0-y1))
	}
	pr(` L%.1f %.1f Z"/>`+"\n", x1, y0)
	pr(`<text x="%.1f" y="%.1f" fill="#2e86c1">%.4g rec/s</text>`+"\n", x1+4, y1+4, top)
	pr(`<text x="%.1f" y="%.1f" fill="#2e86c1">0</text>`+"\n", x1+4, y0)
	pr(`<text x="%.1f" y="%.1f" fill="#2e86c1" text-anchor="end">load (mean per %s)</text>`+"\n", x1, y1-8, fmtSec(float64(per)))

	// Intervals: log axis, left.
	lo, hi := sim.sc.Min.Seconds(), sim.sc.Max.Seconds()
	ly := func(v float64) float64 {
		v = min(max(v, lo), hi)
		return y0 - math.Log(v/lo)/math.Log(hi/lo)*(y0-y1)
	}
	for _, tick := range []float64{1, 10, 60, 600, 3600, 6 * 3600, 86400} {
		if tick < lo || tick > hi {
			continue
		}
		pr(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0, ly(tick), x1, ly(tick))
		pr(`<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", x0-6, ly(tick)+4, fmtSec(tick))
	}
	pr(`<text x="%.1f" y="%.1f" fill="#555">checkpoint interval (log scale)</text>`+"\n", x0, y1-8)
	hot, cold := 0, 0
	sh := sim.layout.share
	for i := range sh {
		if sh[i] > sh[hot] {
			hot = i
		}
		if sh[i] < sh[cold] {
			cold = i
		}
	}
	legendY := float64(lineBottom + 40)
	legend := func(k int, color, dash, label string) {
		x := x0 + float64(k)*190
		pr(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", x, legendY, x+24, legendY, color, dash)
		pr(`<text x="%.1f" y="%.1f">%s</text>`+"\n", x+30, legendY+4, html.EscapeString(label))
	}
	k := 0
	for _, r := range static {
		color, dash := "#7f8c8d", "6 4"
		if r.Policy == PolicyDOCI {
			color = "#2980b9"
		}
		pr(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="%s"/>`+"\n", x0, ly(r.Intervals[hot]), x1, ly(r.Intervals[hot]), color, dash)
		legend(k, color, dash, fmt.Sprintf("%s (busiest)", r.Policy))
		k++
	}
	if on != nil && len(on.Timeline) > 0 {
		for _, c := range []struct {
			i     int
			color string
			what  string
		}{{cold, "#a9dfbf", "quietest"}, {hot, "#1e8449", "busiest"}} {
			tl := on.Timeline[c.i]
			step := max(1, len(tl)/(2*plotPoints))
			pr(`<path fill="none" stroke="%s" stroke-width="1.5" d="`, c.color)
			for j := 0; j < len(tl); j += step {
				cmd := "L"
				if j == 0 {
					cmd = "M"
				}
				pr(`%s%.1f %.1f `, cmd, xt(float64(j+1)*on.TimelineStep), ly(tl[j]))
			}
			pr(`"/>` + "\n")
			legend(k, c.color, "none", fmt.Sprintf("doci-online (%s)", c.what))
			k++
		}
	}
	pr(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0, y0, x1, y0)
	for j := 0; j <= 6; j++ {
		sec := float64(n) * float64(j) / 6
		label := fmtSec(sec)
		if j == 0 {
			label = "0"
		}
		pr(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", xt(sec), y0+16, label)
	}
}
