package plot

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Canvas accumulates SVG markup.
type Canvas struct{ b strings.Builder }

// Printf appends formatted markup as is.
func (c *Canvas) Printf(format string, args ...any) { fmt.Fprintf(&c.b, format, args...) }

// String is the markup written so far.
func (c *Canvas) String() string { return c.b.String() }

// Esc escapes s for text and attribute values.
func Esc(s string) string { return html.EscapeString(s) }

// Begin opens an <svg> of w × h user units that scales to the page's
// width. id may be empty; attrs (already formatted: `font-size="12"`) may
// be empty.
func (c *Canvas) Begin(id string, w, h float64, attrs string) {
	c.Printf(`<svg xmlns="http://www.w3.org/2000/svg"`)
	if id != "" {
		c.Printf(` id="%s"`, Esc(id))
	}
	c.Printf(` viewBox="0 0 %.0f %.0f" width="100%%" role="img"`, w, h)
	if attrs != "" {
		c.Printf(" %s", attrs)
	}
	c.Printf(">\n")
}

// Standalone opens an <svg> for a file of its own: w × h pixels.
func (c *Canvas) Standalone(w, h float64, attrs string) {
	c.Printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f"`, w, h, w, h)
	if attrs != "" {
		c.Printf(" %s", attrs)
	}
	c.Printf(">\n")
}

// End closes the <svg>.
func (c *Canvas) End() { c.Printf("</svg>\n") }

// Line draws a segment.
func (c *Canvas) Line(x1, y1, x2, y2 float64, attrs string) {
	c.Printf(`<line %s x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, attrs, x1, x2, y1, y2)
}

// Rect draws a rectangle, at least 0.5 wide; title, if any, is its tooltip.
func (c *Canvas) Rect(x, y, w, h float64, attrs, title string) {
	w = math.Max(w, 0.5)
	if title == "" {
		c.Printf(`<rect %s x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, attrs, x, y, w, h)
		return
	}
	c.Printf(`<rect %s x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`, attrs, x, y, w, h, Esc(title))
}

// Circle draws a dot; title, if any, is its tooltip.
func (c *Canvas) Circle(x, y, r float64, attrs, title string) {
	if title == "" {
		c.Printf(`<circle %s cx="%.1f" cy="%.1f" r="%.1f"/>`, attrs, x, y, r)
		return
	}
	c.Printf(`<circle %s cx="%.1f" cy="%.1f" r="%.1f"><title>%s</title></circle>`, attrs, x, y, r, Esc(title))
}

// Text writes a label at (x, y), escaped.
func (c *Canvas) Text(x, y float64, attrs, text string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	c.Printf(`<text x="%.1f" y="%.1f"%s>%s</text>`+"\n", x, y, attrs, Esc(text))
}

// Polyline joins points already in canvas coordinates; nothing for none.
func (c *Canvas) Polyline(xs, ys []float64, attrs string) {
	if len(xs) == 0 {
		return
	}
	var pts strings.Builder
	for i := range xs {
		if i > 0 {
			pts.WriteByte(' ')
		}
		fmt.Fprintf(&pts, "%.1f,%.1f", xs[i], ys[i])
	}
	c.Printf(`<polyline %s points="%s"/>`+"\n", attrs, pts.String())
}

// Path draws an SVG path from points in canvas coordinates; closed
// fills it back to the first point.
func (c *Canvas) Path(xs, ys []float64, attrs string, closed bool) {
	if len(xs) == 0 {
		return
	}
	var d strings.Builder
	for i := range xs {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xs[i], ys[i])
	}
	if closed {
		d.WriteString("Z")
	}
	c.Printf(`<path %s d="%s"/>`+"\n", attrs, strings.TrimSpace(d.String()))
}

// Frame maps data coordinates onto a plot area: X0..X1 across from Left
// to W-Right, Y0..Y1 up from H-Bottom to Top. Values outside are clamped
// to the edges.
type Frame struct {
	W, H                     float64 // the whole SVG
	Left, Right, Top, Bottom float64 // margins
	X0, X1                   float64
	Y0, Y1                   float64
}

// NewFrame is a frame w × h with the default margins (room for value
// labels on the left and time labels below) over x0..x1 and y0..y1. An
// empty range is widened to 1 so that nothing divides by zero.
func NewFrame(w, h, x0, x1, y0, y1 float64) Frame {
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	return Frame{W: w, H: h, Left: 84, Right: 20, Top: 10, Bottom: 30, X0: x0, X1: x1, Y0: y0, Y1: y1}
}

// X is the canvas x of data x.
func (f Frame) X(v float64) float64 {
	v = math.Max(f.X0, math.Min(v, f.X1))
	return f.Left + (v-f.X0)/(f.X1-f.X0)*(f.W-f.Left-f.Right)
}

// Y is the canvas y of data y.
func (f Frame) Y(v float64) float64 {
	v = math.Max(f.Y0, math.Min(v, f.Y1))
	return f.H - f.Bottom - (v-f.Y0)/(f.Y1-f.Y0)*(f.H-f.Top-f.Bottom)
}

// Base is the canvas y of the x axis; PlotTop that of the area's top.
func (f Frame) Base() float64    { return f.H - f.Bottom }
func (f Frame) PlotTop() float64 { return f.Top }

// Inner is the plot area's width and height.
func (f Frame) Inner() (w, h float64) { return f.W - f.Left - f.Right, f.H - f.Top - f.Bottom }

// NiceStep is a round step (1, 2 or 5 times a power of ten) giving about
// n ticks over span.
func NiceStep(span float64, n int) float64 {
	if span <= 0 || n <= 0 {
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

// ticks are the multiples of step in lo..hi.
func ticks(lo, hi, step float64) []float64 {
	var out []float64
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi*(1+1e-9)+1e-12; k++ {
		v := k * step
		if v == 0 {
			v = 0 // not -0, which prints as "-0"
		}
		out = append(out, v)
		if len(out) > 1000 {
			break
		}
	}
	return out
}

// XAxis draws the x axis with about n round ticks labelled by label.
func (f Frame) XAxis(c *Canvas, n int, label func(float64) string) {
	base := f.Base()
	c.Line(f.Left, base, f.W-f.Right, base, `class="axis"`)
	c.Printf("\n")
	for _, t := range ticks(f.X0, f.X1, NiceStep(f.X1-f.X0, n)) {
		c.Line(f.X(t), base, f.X(t), base+4, `class="axis"`)
		c.Text(f.X(t), base+16, `text-anchor="middle"`, label(t))
	}
}

// YAxis draws horizontal grid lines at about n round values labelled by
// label, and the axis title rotated on the left.
func (f Frame) YAxis(c *Canvas, n int, title string, label func(float64) string) {
	f.YAxisStep(c, NiceStep(f.Y1-f.Y0, n), title, label)
}

// ByteStep is a round step for about n ticks over span bytes: 1, 2 or 5
// times a power of ten of KiB, MiB or GiB, so that the labels read 256
// KiB or 2 MiB rather than 488.3 KiB.
func ByteStep(span float64, n int) float64 {
	unit := 1.0
	for _, u := range []float64{1 << 30, 1 << 20, 1 << 10} {
		if span/float64(max(n, 1)) >= u {
			unit = u
			break
		}
	}
	return NiceStep(span/unit, n) * unit
}

// YAxisStep is YAxis with grid lines every step.
func (f Frame) YAxisStep(c *Canvas, step float64, title string, label func(float64) string) {
	for _, v := range ticks(f.Y0, f.Y1, step) {
		c.Line(f.Left, f.Y(v), f.W-f.Right, f.Y(v), `class="grid"`)
		c.Text(f.Left-4, f.Y(v)+4, `text-anchor="end"`, label(v))
	}
	if title != "" {
		c.Printf(`<text x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`+"\n", f.H/2, f.H/2, Esc(title))
	}
}

// Series joins (xs[i], ys[i]) in data coordinates.
func (f Frame) Series(c *Canvas, xs, ys []float64, attrs string) {
	px, py := make([]float64, len(xs)), make([]float64, len(xs))
	for i := range xs {
		px[i], py[i] = f.X(xs[i]), f.Y(ys[i])
	}
	c.Polyline(px, py, attrs)
}

// Steps draws ys as a step function: each value holds until the next x,
// the last until X1.
func (f Frame) Steps(c *Canvas, xs, ys []float64, attrs string) {
	var px, py []float64
	for i := range xs {
		if i > 0 {
			px, py = append(px, f.X(xs[i])), append(py, f.Y(ys[i-1]))
		}
		px, py = append(px, f.X(xs[i])), append(py, f.Y(ys[i]))
	}
	if len(xs) > 0 {
		px, py = append(px, f.X(f.X1)), append(py, f.Y(ys[len(ys)-1]))
	}
	c.Polyline(px, py, attrs)
}

// Dots draws a dot per point.
func (f Frame) Dots(c *Canvas, xs, ys []float64, r float64, attrs string, titles []string) {
	for i := range xs {
		t := ""
		if i < len(titles) {
			t = titles[i]
		}
		c.Circle(f.X(xs[i]), f.Y(ys[i]), r, attrs, t)
	}
	c.Printf("\n")
}

// Band shades x0..x1 over the whole height (a fault's window), at least
// min canvas units wide.
func (f Frame) Band(c *Canvas, x0, x1, min float64, attrs, title string) {
	a, b := f.X(x0), f.X(x1)
	if b-a < min {
		b = a + min
	}
	c.Rect(a, f.Top, b-a, f.H-f.Top-f.Bottom, attrs, title)
}

// Limit draws a dashed horizontal line at y = v with a label at its right
// end: a check's limit. A limit above the range is drawn at the top edge
// and says so.
func (f Frame) Limit(c *Canvas, v float64, label string) {
	y := f.Y(v)
	if v > f.Y1 {
		label += " (above the chart)"
	}
	c.Line(f.Left, y, f.W-f.Right, y, `class="limit"`)
	c.Text(f.W-f.Right-4, y-4, `class="limitlabel" text-anchor="end"`, label)
}

// Human is v with a k or M suffix: 1.2k, 3.4M.
func Human(v float64) string {
	switch {
	case math.Abs(v) >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case math.Abs(v) >= 1e3:
		return fmt.Sprintf("%gk", math.Round(v/1e2)/10)
	}
	return fmt.Sprintf("%g", noNegZero(math.Round(v*10)/10))
}

// Bytes is n bytes in B, KiB, MiB or GiB, to a tenth: 1.5 MiB, 500 KiB.
func Bytes(n float64) string {
	one := func(v float64) float64 { return math.Round(v*10) / 10 }
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%g GiB", one(n/(1<<30)))
	case n >= 1<<20:
		return fmt.Sprintf("%g MiB", one(n/(1<<20)))
	case n >= 1<<10:
		return fmt.Sprintf("%g KiB", one(n/(1<<10)))
	}
	return fmt.Sprintf("%.0f B", n)
}

// Seconds labels a time tick given in ms: "2s", "1.5s".
func Seconds(ms float64) string { return fmt.Sprintf("%gs", noNegZero(math.Round(ms)/1000)) }

// Millis labels a value in ms: "250ms".
func Millis(ms float64) string { return fmt.Sprintf("%gms", noNegZero(math.Round(ms*10)/10)) }

func noNegZero(v float64) float64 {
	if v == 0 {
		return 0
	}
	return v
}

// CSS is the style sheet the frames' classes expect (axis, grid, limit);
// pages add their own series classes.
const CSS = `svg{display:block;margin:.5em 0;background:#fff}
svg text{font:11px system-ui,sans-serif;fill:#444}
.axis{stroke:#999;stroke-width:1}.grid{stroke:#eee;stroke-width:1}
.limit{stroke:#c0392b;stroke-width:1.2;stroke-dasharray:6 4}.limitlabel{fill:#c0392b}`
