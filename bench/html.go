package bench

import (
	"fmt"
	"math"
	"os"
	"strings"

	"spate/plot"
)

// panel is one figure of a benchmark: its configurations side by side,
// each with one value per round.
type panel struct {
	Title   string
	Configs []string
	Values  [][]float64 // per configuration, per round
	Format  func(float64) string
}

// add appends a configuration's rounds.
func (p *panel) add(config string, rounds []float64) {
	p.Configs, p.Values = append(p.Configs, config), append(p.Values, rounds)
}

const pageCSS = `body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{margin-bottom:0}h2{margin-top:1.4em;border-bottom:1px solid #ddd;font-size:1.15em}
.lead{color:#333;background:#f7f9fb;border-left:3px solid #aed6f1;padding:.4em .8em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top;font-size:13px}
th{background:#f4f4f4}code{font-size:12px}.muted{color:#777}
` + plot.CSS + `
.round{fill:#2e86c1;fill-opacity:.75;stroke:#1b4f72;stroke-width:.6}.median{stroke:#c0392b;stroke-width:2}`

// writeHTML writes the benchmark's page to path: each panel a chart with
// a column per configuration, a dot per round and the median as a red
// bar, then the configuration and the provenance. Self-contained, no
// script.
func writeHTML(path, title string, m Meta, panels []panel) error {
	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>%s</title><style>%s</style></head><body>\n", plot.Esc(title), pageCSS)
	f("<h1>%s</h1>\n<p class=\"muted\">%s</p>\n", plot.Esc(title), plot.Esc(strings.Join(m.Provenance.Args, " ")))
	f("<p class=\"lead\">Each chart is one figure of the benchmark. Its configurations stand side by side, one column each; every dot is one round (the rounds of all configurations ran interleaved, so a noisy moment of the machine touches them alike), and the red bar is the median the text output reports. Dots spread far apart mean the median is not to be trusted to more than that spread.</p>\n")
	for i, p := range panels {
		f("<h2>%s</h2>\n", plot.Esc(p.Title))
		f("%s", dotChart(fmt.Sprintf("panel-%d", i+1), p))
	}
	f("<h2>Configuration</h2>\n<p><code>%s</code></p>\n", plot.Esc(strings.Join(m.configString(), " ")))
	pv := m.Provenance
	f("<h2>Provenance</h2>\n<table>\n")
	row := func(k, v string) { f("<tr><th>%s</th><td>%s</td></tr>\n", plot.Esc(k), plot.Esc(v)) }
	row("spate", strings.TrimSpace(pv.Version+" "+pv.Commit))
	if pv.CommitTime != "" {
		row("commit time", pv.CommitTime)
	}
	if pv.Modified {
		row("work tree", "modified (uncommitted changes)")
	}
	row("Go", pv.Go)
	row("OS/arch", pv.OS+"/"+pv.Arch)
	row("CPU", fmt.Sprintf("%s, %d logical CPUs", pv.CPU, pv.CPUs))
	row("started", m.Started.Format("2006-01-02 15:04:05 MST"))
	f("</table>\n</body></html>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}

// dotChart draws one panel.
func dotChart(id string, p panel) string {
	var top float64
	for _, vs := range p.Values {
		for _, v := range vs {
			top = math.Max(top, v)
		}
	}
	if top <= 0 {
		top = 1
	}
	n := float64(max(len(p.Configs), 1))
	fr := plot.NewFrame(1000, 240, 0, n, 0, top*1.12)
	fr.Left = 80
	var c plot.Canvas
	c.Begin(id, fr.W, fr.H, "")
	format := p.Format
	if format == nil {
		format = plot.Human
	}
	fr.YAxis(&c, 4, "", format)
	base := fr.Base()
	c.Line(fr.Left, base, fr.W-fr.Right, base, `class="axis"`)
	c.Printf("\n")
	colW := (fr.W - fr.Left - fr.Right) / n
	for i, name := range p.Configs {
		mid := float64(i) + 0.5
		c.Text(fr.X(mid), base+18, `text-anchor="middle" style="font-size:13px"`, name)
		vs := p.Values[i]
		for k, v := range vs {
			// Rounds side by side within the column, so equal values do
			// not hide each other.
			off := 0.0
			if len(vs) > 1 {
				off = (float64(k)/float64(len(vs)-1) - 0.5) * math.Min(colW*0.4, 12*float64(len(vs)))
			}
			c.Circle(fr.X(mid)+off, fr.Y(v), 4.5, `class="round"`, fmt.Sprintf("%s, round %d: %s", name, k+1, format(v)))
		}
		if len(vs) > 0 {
			m := median(vs)
			c.Line(fr.X(mid)-colW*0.3, fr.Y(m), fr.X(mid)+colW*0.3, fr.Y(m), `class="median"`)
			c.Text(fr.X(mid)+colW*0.3+4, fr.Y(m)+4, `style="fill:#c0392b"`, format(m))
		}
		c.Printf("\n")
	}
	c.End()
	return c.String()
}
