package tuner

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"spate/plot"
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
	var c plot.Canvas
	c.Standalone(plotW, plotH, `font-family="sans-serif" font-size="12"`)
	c.Printf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	c.Text(plotLeft, 28, `font-size="16" font-weight="bold"`, "spate tuner sim: "+ld.Spec)
	c.Text(plotLeft, 46, `fill="#555"`, fmt.Sprintf("failures %s, %d instances, %d failures", sim.sc.Failures.Spec, sim.sc.Instances, sim.FailureCount()))

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
		y := float64(barTop + 10 + i*(barH+8))
		c.Text(plotLeft-8, y+barH/2+4, `text-anchor="end"`, r.Policy)
		c.Rect(x0, y, max(1, xs(effs[i])-x0), barH, fmt.Sprintf(`fill="%s"`, plotColors[i%len(plotColors)]), "")
		c.Printf("\n")
		c.Text(xs(effs[i])+6, y+barH/2+4, "", fmt.Sprintf("%.3f%%", 100*effs[i]))
	}
	axisY := float64(barTop + 10 + len(results)*(barH+8))
	c.Line(x0, axisY, x1, axisY, `stroke="black"`)
	c.Printf("\n")
	for k := 0; k <= 4; k++ {
		e := lo + (1-lo)*float64(k)/4
		c.Text(xs(e), axisY+16, `text-anchor="middle" fill="#555"`, fmt.Sprintf("%.1f%%", 100*e))
	}
	c.Text(x0, axisY+34, `fill="#555"`, "efficiency (useful / (useful + waste))")

	renderTimeline(&c, sim, ld, results)
	c.End()
	b.WriteString(c.String())
}

func renderTimeline(c *plot.Canvas, sim *Sim, ld *Load, results []*Result) {
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
	px, py := []float64{x0}, []float64{y0}
	for k, v := range load {
		px, py = append(px, xt(float64(k*per))), append(py, y0-v/top*(y0-y1))
	}
	px, py = append(px, x1), append(py, y0)
	c.Path(px, py, `fill="#d6eaf8" stroke="none"`, true)
	c.Text(x1+4, y1+4, `fill="#2e86c1"`, fmt.Sprintf("%.4g rec/s", top))
	c.Text(x1+4, y0, `fill="#2e86c1"`, "0")
	c.Text(x1, y1-8, `fill="#2e86c1" text-anchor="end"`, fmt.Sprintf("load (mean per %s)", fmtSec(float64(per))))

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
		c.Line(x0, ly(tick), x1, ly(tick), `stroke="#eee"`)
		c.Printf("\n")
		c.Text(x0-6, ly(tick)+4, `text-anchor="end" fill="#555"`, fmtSec(tick))
	}
	c.Text(x0, y1-8, `fill="#555"`, "checkpoint interval (log scale)")
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
		c.Line(x, legendY, x+24, legendY, fmt.Sprintf(`stroke="%s" stroke-width="2" stroke-dasharray="%s"`, color, dash))
		c.Printf("\n")
		c.Text(x+30, legendY+4, "", label)
	}
	k := 0
	for _, r := range static {
		color, dash := "#7f8c8d", "6 4"
		if r.Policy == PolicyDOCI {
			color = "#2980b9"
		}
		c.Line(x0, ly(r.Intervals[hot]), x1, ly(r.Intervals[hot]), fmt.Sprintf(`stroke="%s" stroke-width="1.5" stroke-dasharray="%s"`, color, dash))
		c.Printf("\n")
		legend(k, color, dash, fmt.Sprintf("%s (busiest)", r.Policy))
		k++
	}
	if on != nil && len(on.Timeline) > 0 {
		for _, line := range []struct {
			i     int
			color string
			what  string
		}{{cold, "#a9dfbf", "quietest"}, {hot, "#1e8449", "busiest"}} {
			tl := on.Timeline[line.i]
			step := max(1, len(tl)/(2*plotPoints))
			var px, py []float64
			for j := 0; j < len(tl); j += step {
				px, py = append(px, xt(float64(j+1)*on.TimelineStep)), append(py, ly(tl[j]))
			}
			c.Path(px, py, fmt.Sprintf(`fill="none" stroke="%s" stroke-width="1.5"`, line.color), false)
			legend(k, line.color, "none", fmt.Sprintf("doci-online (%s)", line.what))
			k++
		}
	}
	c.Line(x0, y0, x1, y0, `stroke="black"`)
	c.Printf("\n")
	for j := 0; j <= 6; j++ {
		sec := float64(n) * float64(j) / 6
		label := fmtSec(sec)
		if j == 0 {
			label = "0"
		}
		c.Text(xt(sec), y0+16, `text-anchor="middle" fill="#555"`, label)
	}
}
