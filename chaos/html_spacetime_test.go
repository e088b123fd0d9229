package chaos

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"spate/internal/human"
	"spate/spacetime"
)

// xnode is any element of the page, parsed as XML.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xnode    `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n xnode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n xnode) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return v
}

// all are the elements under n (n included) that keep.
func (n xnode) all(keep func(xnode) bool) []xnode {
	var out []xnode
	if keep(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(keep)...)
	}
	return out
}

func named(local, class string) func(xnode) bool {
	return func(n xnode) bool {
		return n.XMLName.Local == local && (class == "" || n.attr("class") == class)
	}
}

// diagramsOf writes r's page and returns its space-time SVGs, parsed.
func diagramsOf(t *testing.T, r *Report) ([]xnode, string) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	var page xnode
	if err := xml.Unmarshal(b.Bytes(), &page); err != nil {
		t.Fatalf("the page does not parse as XML: %v", err)
	}
	svgs := page.all(func(n xnode) bool {
		return n.XMLName.Local == "svg" && strings.HasPrefix(n.attr("id"), "spacetime-")
	})
	return svgs, b.String()
}

// tbox is a text label's extent, its width estimated from its length at
// 0.6 em a character of plot.CSS's 11px font.
type tbox struct {
	text           string
	x0, y0, x1, y1 float64
}

func textBoxes(t *testing.T, svg xnode) []tbox {
	var out []tbox
	for _, n := range svg.all(named("text", "")) {
		x, y := n.num(t, "x"), n.num(t, "y")
		w := float64(utf8.RuneCountInString(n.Text)) * 0.6 * 11
		switch n.attr("text-anchor") {
		case "end":
			x -= w
		case "middle":
			x -= w / 2
		}
		out = append(out, tbox{n.Text, x, y - 11, x + w, y + 2})
	}
	return out
}

func (b tbox) crossed(x0, y0, x1, y1 float64) bool {
	for i := 0; i <= 100; i++ {
		f := float64(i) / 100
		x, y := x0+(x1-x0)*f, y0+(y1-y0)*f
		if x > b.x0 && x < b.x1 && y > b.y0 && y < b.y1 {
			return true
		}
	}
	return false
}

// checkDiagram checks one SVG against the loss it draws: a lane per
// instance, an arrow per replay with its count, a rollback per lane
// under --ft global, and no label on another label or on an arrow.
func checkDiagram(t *testing.T, svg xnode, l spacetime.Loss) {
	t.Helper()
	lanes := svg.all(named("g", "lane"))
	if len(lanes) != len(l.Lanes) {
		t.Errorf("%s: %d lanes, the model has %d", svg.attr("id"), len(lanes), len(l.Lanes))
	}
	for i, g := range lanes {
		if i < len(l.Lanes) && g.attr("data-instance") != l.Lanes[i].Instance {
			t.Errorf("lane %d is %q, the model's is %q", i, g.attr("data-instance"), l.Lanes[i].Instance)
		}
	}
	boxes := textBoxes(t, svg)
	texts := map[string]bool{}
	for _, b := range boxes {
		texts[b.text] = true
	}
	replays := svg.all(named("g", "replay"))
	if len(replays) != len(l.Replays) {
		t.Errorf("%s: %d replay arrows, the model has %d", svg.attr("id"), len(replays), len(l.Replays))
	}
	var arrows [][4]float64
	for i, g := range replays {
		if i >= len(l.Replays) {
			break
		}
		rp := l.Replays[i]
		if g.attr("data-from") != rp.From || g.attr("data-to") != rp.To || g.attr("data-records") != fmt.Sprint(rp.Records) {
			t.Errorf("replay arrow %d: %v, the model's is %+v", i, g.Attrs, rp)
		}
		lines := g.all(named("line", "st-replay"))
		if len(lines) != 1 {
			t.Errorf("replay %s→%s: %d lines", rp.From, rp.To, len(lines))
			continue
		}
		ln := lines[0]
		arrows = append(arrows, [4]float64{ln.num(t, "x1"), ln.num(t, "y1"), ln.num(t, "x2"), ln.num(t, "y2")})
		if !texts[human.Count(float64(rp.Records))] {
			t.Errorf("replay %s→%s: no label %q", rp.From, rp.To, human.Count(float64(rp.Records)))
		}
	}
	if l.Rollback != nil {
		if n := len(svg.all(named("path", "st-rollback"))); n != len(l.Lanes) {
			t.Errorf("%d rollback arcs for %d lanes", n, len(l.Lanes))
		}
	}
	for i, a := range boxes {
		for _, b := range boxes[i+1:] {
			if a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 {
				t.Errorf("%s: labels %q and %q overlap", svg.attr("id"), a.text, b.text)
			}
		}
		for _, ar := range arrows {
			if a.crossed(ar[0], ar[1], ar[2], ar[3]) {
				t.Errorf("%s: label %q lies on a replay arrow", svg.attr("id"), a.text)
			}
		}
	}
}

// recorded is a report of a run in spacetime's testdata: only its
// losses, which is all the section draws.
func recorded(t *testing.T, name string) *Report {
	t.Helper()
	evs, _, err := ReadEvents("../spacetime/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return &Report{Run: name, Verdict: VerdictPass, Losses: spacetime.Losses(evs)}
}

func TestTheReportDrawsEachLossAsASpaceTimeDiagram(t *testing.T) {
	kill, err := BuildReport(killRun(t), nil, Verify{})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Report{
		"run-kill":                    kill,
		"spate.jsonl":                 recorded(t, "spate.jsonl"),
		"global.jsonl":                recorded(t, "global.jsonl"),
		"global-short-interval.jsonl": recorded(t, "global-short-interval.jsonl"),
		"spate-parallel.jsonl":        recorded(t, "spate-parallel.jsonl"),
	} {
		t.Run(name, func(t *testing.T) {
			if len(r.Losses) == 0 {
				t.Fatal("no loss in the run")
			}
			svgs, _ := diagramsOf(t, r)
			if len(svgs) != len(r.Losses) {
				t.Fatalf("%d diagrams for %d losses", len(svgs), len(r.Losses))
			}
			for i, svg := range svgs {
				checkDiagram(t, svg, r.Losses[i])
			}
		})
	}
}

func TestTheReportDrawsThreeLossesAndSaysHowManyMore(t *testing.T) {
	r := recorded(t, "spate.jsonl")
	for len(r.Losses) < 5 {
		r.Losses = append(r.Losses, r.Losses[0])
	}
	svgs, page := diagramsOf(t, r)
	if len(svgs) != 3 {
		t.Errorf("%d diagrams of 5 losses, want 3", len(svgs))
	}
	if !strings.Contains(page, "2 more losses not drawn") {
		t.Error("the page does not say how many losses it left out")
	}
	r.Losses = nil
	if svgs, page := diagramsOf(t, r); len(svgs) != 0 || !strings.Contains(page, "no node was lost") {
		t.Errorf("%d diagrams of no loss", len(svgs))
	}
}
