package plot

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestNiceSteps(t *testing.T) {
	for _, tc := range []struct {
		name       string
		span, want float64
		bytes      bool
	}{
		// The step is at least span/4: at most about 4 ticks.
		{"tens", 87, 50, false},
		{"a round span", 1000, 500, false},
		{"small", 0.37, 0.1, false},
		{"nothing", 0, 1, false},
		{"KiB, not 488.3 KiB", 1100 * 1024, 500 * 1024, true},
		{"MiB", 9 << 20, 5 << 20, true},
		{"bytes", 300, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NiceStep(tc.span, 4)
			if tc.bytes {
				got = ByteStep(tc.span, 4)
			}
			if got != tc.want {
				t.Errorf("step over %v = %v, want %v", tc.span, got, tc.want)
			}
		})
	}
}

func TestTicksNeverPrintMinusZero(t *testing.T) {
	// ceil(-0.3/5) is -0: the first tick would be -0 × 5.
	for _, v := range ticks(-0.3, 20, 5) {
		if v == 0 && math.Signbit(v) {
			t.Errorf("tick -0 (prints %q)", Seconds(v))
		}
	}
	if s := Seconds(math.Copysign(0, -1)); s != "0s" {
		t.Errorf("Seconds(-0) = %q", s)
	}
	if s := Millis(-0.01); s != "0ms" {
		t.Errorf("Millis(-0.01) = %q", s)
	}
	if got := ticks(-7.5, 20, 5); len(got) != 6 || got[0] != -5 || got[5] != 20 {
		t.Errorf("ticks %v", got)
	}
}

func TestFrameMapsAndClamps(t *testing.T) {
	f := NewFrame(1000, 200, 100, 200, 0, 10)
	f.Left, f.Right, f.Top, f.Bottom = 100, 0, 0, 0
	if x := f.X(150); x != 550 {
		t.Errorf("X(150) = %v", x)
	}
	if x := f.X(-1e9); x != 100 {
		t.Errorf("X below the range = %v, want the left edge", x)
	}
	if y := f.Y(10); y != 0 {
		t.Errorf("Y(top) = %v", y)
	}
	if y := f.Y(99); y != 0 {
		t.Errorf("Y above the range = %v, want the top", y)
	}
	if g := NewFrame(10, 10, 5, 5, 3, 3); g.X1 <= g.X0 || g.Y1 <= g.Y0 {
		t.Errorf("an empty range is not widened: %+v", g)
	}
}

// A chart with every element is well-formed XML, escapes its text and
// says when a limit lies above it.
func TestChartIsWellFormed(t *testing.T) {
	var c Canvas
	f := NewFrame(600, 200, 0, 10000, 0, 100)
	c.Begin("a<b", f.W, f.H, `font-size="12"`)
	f.YAxis(&c, 4, "value & more", Human)
	f.XAxis(&c, 10, Seconds)
	f.Series(&c, []float64{0, 5000, 10000}, []float64{0, 50, 100}, `class="s"`)
	f.Steps(&c, []float64{0, 5000}, []float64{10, 20}, `class="t"`)
	f.Dots(&c, []float64{1000}, []float64{30}, 3, `class="d"`, []string{"x < y"})
	f.Band(&c, 2000, 2000, 2, `class="fault"`, `kill "n1"`)
	f.Limit(&c, 500, "max_lag: 500ms")
	c.Path([]float64{1, 2, 3}, []float64{1, 2, 1}, `fill="none"`, true)
	c.End()
	out := c.String()
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, out)
		}
	}
	for _, want := range []string{`id="a&lt;b"`, "value &amp; more", "<title>x &lt; y</title>", "(above the chart)", `width="2.0"`, " Z\"/>"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in the chart", want)
		}
	}
	if strings.Count(out, "<polyline") != 2 {
		t.Errorf("%d polylines, want the series and the steps", strings.Count(out, "<polyline"))
	}
}
