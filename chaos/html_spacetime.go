package chaos

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"spate/internal/human"
	"spate/plot"
	"spate/spacetime"
)

// maxDiagrams is how many losses the page draws as space-time diagrams.
const maxDiagrams = 3

// The geometry of a space-time diagram, in SVG user units.
const (
	stLeft    = 150.0 // the lane names
	stRight   = 30.0
	stGap     = 30.0 // an axis break
	stTop     = 64.0 // the first lane, under three rows of labels
	stRowH    = 40.0
	stFont    = 11.0 // plot.CSS's text size
	stCharW   = 0.62 * stFont
	stLabelRy = 14.0 // the rows of labels above the lanes
)

const spacetimeCSS = `
.st-lane{stroke:#888;stroke-width:1.5}.st-down{stroke:#fff;stroke-width:4}.st-downdash{stroke:#c0392b;stroke-width:1.2;stroke-dasharray:2 3}
.st-catchup{stroke:#2e86c1;stroke-width:3.5}.st-tick{stroke:#555;stroke-width:1.2}.st-restored{stroke:#8e44ad;stroke-width:3}
.st-kill{stroke:#c0392b;stroke-width:2.5}.st-restore{fill:#8e44ad}.st-done{fill:#28b463}
.st-replay{stroke:#117a65;stroke-width:1.4}.st-rollback{fill:none;stroke:#8e44ad;stroke-width:1.2;stroke-dasharray:4 2}
.st-break{stroke:#999;stroke-width:1.2}.st-detect{stroke:#f5b041;stroke-width:1;stroke-dasharray:3 3}
.st-replaylabel{fill:#117a65}.st-killlabel{fill:#c0392b}.st-restorelabel{fill:#6c3483}`

func (p *page) spacetime() {
	ls := p.r.Losses
	if len(ls) == 0 {
		p.f("<p class=\"muted\">no node was lost while it hosted instances</p>\n")
		return
	}
	p.lead("Each loss of a node drawn as a space-time diagram, as a lecture draws one by hand: one line per operator instance, time to the right. Ticks are completed checkpoints (purple: the one the instance was restored from), the red X is the fault on the lanes of the instances the node hosted, red dots the time they were down, the purple dot their restore and the thick blue line their catching up, to the green dot. A green arrow is a replay from an upstream's backup to the restored instance, from the restore to the moment the upstream reported it, with the records it sent. With --ft global every lane rolls back to the global checkpoint (purple arcs). The axis covers only the recovery and the checkpoint it went back to; when they lie far apart it is broken (//) so that the recovery keeps most of the width. Times are from the fault.")
	for i, l := range ls {
		if i == maxDiagrams {
			p.f("<p class=\"muted\">%s not drawn.</p>\n", human.Plural(len(ls)-maxDiagrams, "more loss"))
			break
		}
		p.f("<h3>%s</h3>\n", esc(lossTitle(l)))
		d := newDiagram(l, fmt.Sprintf("spacetime-%d", i+1))
		d.draw()
		p.svg(&d.c)
		p.f("<p>%s</p>\n", esc(lossSummary(l)))
	}
}

func lossTitle(l spacetime.Loss) string {
	verb := l.Fault
	if verb == "" {
		verb = "lost"
	}
	return fmt.Sprintf("%s: %s at %s, %s", l.Node, verb, secs(ms(l.Killed.Sub(l.Origin))), strings.Join(l.Lost(), ", "))
}

func lossSummary(l spacetime.Loss) string {
	var parts []string
	if rb := l.Rollback; rb != nil {
		to := fmt.Sprintf("global checkpoint %d", rb.Checkpoint)
		if rb.Checkpoint == 0 {
			to = "its start"
		}
		if len(rb.Unusable) > 0 {
			var ids []string
			for _, id := range rb.Unusable {
				ids = append(ids, fmt.Sprint(id))
			}
			to = fmt.Sprintf("%s, global checkpoints %s found damaged first", to, strings.Join(ids, ", "))
		}
		parts = append(parts, fmt.Sprintf("the whole job rolled back to %s; the sources read %s again", to, human.Plural(int(rb.Records), "record")))
	}
	for _, r := range l.Restores {
		s := fmt.Sprintf("%s restored on %s from checkpoint %d", r.Instance, r.Node, r.Checkpoint)
		if r.Checkpoint == 0 {
			s = fmt.Sprintf("%s restarted on %s from nothing", r.Instance, r.Node)
		}
		switch {
		case r.Restored.IsZero():
			s = r.Instance + " never restored"
		case r.Done.IsZero():
			s += ", never caught up"
		default:
			s += ", caught up " + msText(ms(r.Done.Sub(l.Killed))) + " after the fault"
		}
		parts = append(parts, s)
	}
	if len(l.Split) > 0 {
		parts = append(parts, "the lost key groups split: "+strings.Join(l.Split, ", "))
	}
	var recs uint64
	for _, rp := range l.Replays {
		recs += rp.Records
	}
	if len(l.Replays) > 0 {
		parts = append(parts, fmt.Sprintf("%s, %s", human.Plural(len(l.Replays), "replay"), human.Plural(int(recs), "record")))
	}
	if len(parts) == 0 {
		return "Nothing was restored within the run."
	}
	s := strings.Join(parts, "; ") + "."
	return strings.ToUpper(s[:1]) + s[1:]
}

// box is a label's or a line's extent.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

// textBox is where a label of n runes at (x, y) with anchor lies.
func textBox(x, y float64, anchor string, n int) box {
	w := float64(n)*stCharW + 2
	switch anchor {
	case "end":
		x -= w
	case "middle":
		x -= w / 2
	}
	return box{x, y - stFont, x + w, y + 3}
}

// segHits says whether segment (x0,y0)-(x1,y1) crosses b.
func segHits(b box, x0, y0, x1, y1 float64) bool {
	const steps = 24
	for i := 0; i <= steps; i++ {
		f := float64(i) / steps
		x, y := x0+(x1-x0)*f, y0+(y1-y0)*f
		if x > b.x0 && x < b.x1 && y > b.y0 && y < b.y1 {
			return true
		}
	}
	return false
}

// spot is a candidate place of a label.
type spot struct {
	x, y   float64
	anchor string
}

// diagram is one loss being drawn.
type diagram struct {
	l         spacetime.Loss
	id        string
	c         plot.Canvas
	ax        spacetime.Axis
	w, h      float64
	labels    []box
	arrows    [][4]float64 // the replay arrows, one per replay (zero: not drawn)
	obstacles [][4]float64 // other lines labels keep off
}

func newDiagram(l spacetime.Loss, id string) *diagram {
	d := &diagram{l: l, id: id, w: chartW}
	d.ax = l.Axis(d.w-stLeft-stRight, stGap)
	d.h = d.laneY(len(l.Lanes)-1) + 56
	return d
}

func (d *diagram) laneY(i int) float64 { return stTop + float64(i)*stRowH }
func (d *diagram) axisY() float64      { return d.laneY(len(d.l.Lanes)-1) + 26 }

// x is where time t is drawn; false if it is not.
func (d *diagram) x(t time.Time) (float64, bool) {
	if t.IsZero() {
		return 0, false
	}
	x, ok := d.ax.X(t)
	return stLeft + x, ok
}

// label writes text at the first spot where it overlaps no label and no
// arrow, and says whether it found one.
func (d *diagram) label(text, attrs string, spots ...spot) bool {
	n := utf8.RuneCountInString(text)
	for _, s := range spots {
		b := textBox(s.x, s.y, s.anchor, n)
		if b.x0 < 0 || b.x1 > d.w || b.y0 < 0 || b.y1 > d.h {
			continue
		}
		free := true
		for _, o := range d.labels {
			free = free && !o.overlaps(b)
		}
		for _, a := range d.arrows {
			free = free && !segHits(b, a[0], a[1], a[2], a[3])
		}
		for _, a := range d.obstacles {
			free = free && !segHits(b, a[0], a[1], a[2], a[3])
		}
		if !free {
			continue
		}
		d.labels = append(d.labels, b)
		a := fmt.Sprintf(`text-anchor="%s"`, s.anchor)
		if attrs != "" {
			a += " " + attrs
		}
		d.c.Text(s.x, s.y, a, text)
		return true
	}
	return false
}

// topSpots are the rows above the lanes at x, nearest the lanes first.
func topSpots(x float64) []spot {
	var out []spot
	for _, y := range []float64{stTop - 16, stTop - 16 - stLabelRy, stTop - 16 - 2*stLabelRy} {
		out = append(out, spot{x, y, "middle"}, spot{x + 3, y, "start"}, spot{x - 3, y, "end"})
	}
	return out
}

// seg draws, on lane y, the part of [a, b] the axis shows.
func (d *diagram) seg(y float64, a, b time.Time, cls string) {
	for _, p := range d.ax.Parts {
		lo, hi := a, b
		if lo.Before(p.From) {
			lo = p.From
		}
		if hi.After(p.To) {
			hi = p.To
		}
		if !hi.After(lo) {
			continue
		}
		x0, _ := d.x(lo)
		x1, _ := d.x(hi)
		d.c.Line(x0, y, x1, y, fmt.Sprintf(`class="%s"`, cls))
	}
}

func (d *diagram) draw() {
	l := d.l
	d.c.Begin(d.id, d.w, d.h, `class="spacetime"`)
	d.c.Printf(`<defs><marker id="%s-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="#117a65"/></marker>`+
		`<marker id="%s-back" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="#8e44ad"/></marker></defs>`+"\n", d.id, d.id)
	// The arrows first, so that the labels keep off them.
	d.planArrows()
	for i, ln := range l.Lanes {
		d.lane(i, ln)
	}
	d.breaks()
	d.drawArrows()
	d.events()
	d.axis()
	d.c.End()
}

// lane draws one instance's line: its name, the line, the time it was
// down and catching up, its checkpoints, the fault and the restore.
func (d *diagram) lane(i int, ln spacetime.Lane) {
	l := d.l
	y := d.laneY(i)
	d.c.Printf(`<g class="lane" data-instance="%s">`, esc(ln.Instance))
	name := ln.Instance
	if ln.Node != "" {
		name += " (" + ln.Node + ")"
	}
	d.label(name, "", spot{stLeft - 8, y + 4, "end"})
	d.seg(y, l.Start, l.End, "st-lane")
	down, up, done := d.downTimes(ln)
	if !down.IsZero() {
		end := up
		if end.IsZero() {
			end = l.End
		}
		d.seg(y, down, end, "st-down")
		d.seg(y, down, end, "st-downdash")
	}
	if !up.IsZero() && !done.IsZero() && l.Rollback == nil {
		d.seg(y, up, done, "st-catchup")
	}
	d.ticks(i, ln)
	id, _, _ := l.Restored(ln.Instance)
	if ln.Lost {
		if x, ok := d.x(l.Killed); ok {
			d.c.Printf(`<g class="st-kill"><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><title>%s: %s on %s</title></g>`,
				x-5, x+5, y-5, y+5, x-5, x+5, y+5, y-5, esc(ln.Instance), esc(orLost(l.Fault)), esc(l.Node))
		}
	}
	if x, ok := d.x(up); ok && !up.IsZero() {
		d.c.Circle(x, y, 4, `class="st-restore"`, fmt.Sprintf("%s restored from checkpoint %d at %s", ln.Instance, id, since(up.Sub(l.Killed))))
		if rs := d.restore(ln.Instance); rs != nil {
			text := fmt.Sprintf("from %d on %s", rs.Checkpoint, rs.Node)
			if rs.Checkpoint == 0 {
				text = "from nothing on " + rs.Node
			}
			d.label(text, `class="st-restorelabel"`, spot{x - 6, y - 6, "end"}, spot{x - 6, y + 15, "end"}, spot{x + 6, y + 15, "start"}, spot{x + 6, y - 6, "start"})
		}
	}
	if x, ok := d.x(done); ok && !done.IsZero() && l.Rollback == nil {
		d.c.Circle(x, y, 4, `class="st-done"`, fmt.Sprintf("%s caught up at %s", ln.Instance, since(done.Sub(l.Killed))))
	}
	d.c.Printf("</g>\n")
}

// ticks draws a lane's checkpoints, the one it was restored from
// heavier and labelled (under --ft global, on the first lane only: one
// label says it for every lane).
func (d *diagram) ticks(i int, ln spacetime.Lane) {
	l := d.l
	y := d.laneY(i)
	id, at, restored := l.Restored(ln.Instance)
	for _, tk := range ln.Ticks {
		x, ok := d.x(tk.At)
		if !ok {
			continue
		}
		kind := "delta"
		if tk.Full {
			kind = "full"
		}
		if tk.Global {
			kind = "global"
		}
		title := fmt.Sprintf("%s checkpoint %d (%s) at %s", ln.Instance, tk.ID, kind, since(tk.At.Sub(l.Killed)))
		if restored && tk.ID == id && tk.At.Equal(at) {
			d.c.Printf(`<line class="st-restored" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"><title>%s, restored from</title></line>`, x, x, y-10, y+10, esc(title))
			if l.Rollback == nil || i == 0 {
				text := fmt.Sprintf("checkpoint %d", tk.ID)
				if tk.Global {
					text = fmt.Sprintf("global checkpoint %d", tk.ID)
				}
				d.label(text, `class="st-restorelabel"`, spot{x, y - 14, "middle"}, spot{x - 4, y - 14, "end"}, spot{x + 4, y - 14, "start"}, spot{x, y + 22, "middle"})
			}
			continue
		}
		d.c.Printf(`<line class="st-tick" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"><title>%s</title></line>`, x, x, y-6, y+6, esc(title))
	}
}

func orLost(verb string) string {
	if verb == "" {
		return "lost"
	}
	return verb
}

// downTimes are when a lane's instance stopped, was restored and had
// caught up; zero times for what did not happen.
func (d *diagram) downTimes(ln spacetime.Lane) (down, up, done time.Time) {
	l := d.l
	if rb := l.Rollback; rb != nil {
		down = l.Detected
		if ln.Lost {
			down = l.Killed
		}
		return down, rb.Restored, rb.Restored
	}
	if !ln.Lost {
		return
	}
	if rs := d.restore(ln.Instance); rs != nil {
		return l.Killed, rs.Restored, rs.Done
	}
	return l.Killed, time.Time{}, time.Time{}
}

func (d *diagram) restore(id string) *spacetime.Restore {
	for i := range d.l.Restores {
		if d.l.Restores[i].Instance == id {
			return &d.l.Restores[i]
		}
	}
	return nil
}

func (d *diagram) laneIndex(id string) int {
	for i, ln := range d.l.Lanes {
		if ln.Instance == id {
			return i
		}
	}
	return -1
}

// planArrows works out each replay's arrow, from the upstream's lane at
// the restore to the restored lane when the upstream reported it, and
// each rollback's arc, before anything is labelled.
func (d *diagram) planArrows() {
	for _, rp := range d.l.Replays {
		d.arrows = append(d.arrows, d.replayLine(rp))
	}
	if x, ok := d.x(d.l.Detected); ok && !d.l.Detected.Equal(d.l.Killed) {
		d.obstacles = append(d.obstacles, [4]float64{x, stTop - 10, x, d.axisY()})
	}
	for _, arc := range d.rollbackArcs() {
		// Each arc as the chords of a few points of it.
		const n = 8
		px, py := arc[0], arc[1]
		for i := 1; i <= n; i++ {
			u := float64(i) / n
			x := (1-u)*(1-u)*arc[0] + 2*(1-u)*u*arc[2] + u*u*arc[4]
			y := (1-u)*(1-u)*arc[1] + 2*(1-u)*u*arc[3] + u*u*arc[5]
			d.obstacles = append(d.obstacles, [4]float64{px, py, x, y})
			px, py = x, y
		}
	}
}

// rollbackArcs are, under --ft global, the quadratic curves (from,
// control, to) from each lane's restore back to the global checkpoint.
func (d *diagram) rollbackArcs() [][6]float64 {
	rb := d.l.Rollback
	if rb == nil || rb.Restored.IsZero() || rb.CheckpointAt.IsZero() {
		return nil
	}
	x0, ok0 := d.x(rb.Restored)
	x1, ok1 := d.x(rb.CheckpointAt)
	if !ok0 || !ok1 {
		return nil
	}
	var out [][6]float64
	for i := range d.l.Lanes {
		y := d.laneY(i)
		out = append(out, [6]float64{x0, y - 4, (x0 + x1) / 2, y - stRowH/2, x1 + 3, y - 6})
	}
	return out
}

// replayLine is the segment of a replay's arrow; a zero one if it cannot
// be drawn.
func (d *diagram) replayLine(rp spacetime.Replay) [4]float64 {
	from, to := d.laneIndex(rp.From), d.laneIndex(rp.To)
	if from < 0 || to < 0 || from == to {
		return [4]float64{}
	}
	// It starts once both ends run again, if either was restored (a
	// parallel recovery's new instances were not: theirs is vertical).
	var start time.Time
	for _, id := range []string{rp.To, rp.From} {
		if rs := d.restore(id); rs != nil && rs.Restored.After(start) {
			start = rs.Restored
		}
	}
	if start.IsZero() || start.After(rp.At) {
		start = rp.At
	}
	x0, ok0 := d.x(start)
	x1, ok1 := d.x(rp.At)
	if !ok0 || !ok1 {
		return [4]float64{}
	}
	y0, y1 := d.laneY(from), d.laneY(to)
	if y1 > y0 {
		y1 -= 5
	} else {
		y1 += 5
	}
	return [4]float64{x0, y0, x1, y1}
}

func (d *diagram) drawArrows() {
	l := d.l
	for i, rp := range l.Replays {
		a := d.arrows[i]
		d.c.Printf(`<g class="replay" data-from="%s" data-to="%s" data-records="%d">`, esc(rp.From), esc(rp.To), rp.Records)
		if a != ([4]float64{}) {
			d.c.Printf(`<line class="st-replay" marker-end="url(#%s-head)" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"><title>%s replayed %s to %s</title></line>`,
				d.id, a[0], a[2], a[1], a[3], esc(rp.From), esc(human.Plural(int(rp.Records), "record")), esc(rp.To))
			// The count beside the arrow, along it: on the side the
			// arrow leans away from first (above a line going down to
			// the right, so that it does not run into the label).
			var spots []spot
			above, below := spot{anchor: "start"}, spot{anchor: "end"}
			if (a[3]-a[1])*(a[2]-a[0]) < 0 {
				above, below = spot{anchor: "end"}, spot{anchor: "start"}
			}
			for _, f := range []float64{0.5, 0.35, 0.65, 0.2, 0.8} {
				x, y := a[0]+(a[2]-a[0])*f, a[1]+(a[3]-a[1])*f
				dx := 4.0
				if above.anchor == "end" {
					dx = -4
				}
				spots = append(spots, spot{x + dx, y - 5, above.anchor}, spot{x - dx, y + 14, below.anchor},
					spot{x - dx, y - 5, below.anchor}, spot{x + dx, y + 14, above.anchor})
			}
			d.label(human.Count(float64(rp.Records)), `class="st-replaylabel"`, spots...)
		}
		d.c.Printf("</g>\n")
	}
	for i, a := range d.rollbackArcs() {
		d.c.Printf(`<path class="st-rollback" marker-end="url(#%s-back)" d="M%.1f %.1f Q%.1f %.1f %.1f %.1f"><title>%s rolls back to global checkpoint %d</title></path>`+"\n",
			d.id, a[0], a[1], a[2], a[3], a[4], a[5], esc(l.Lanes[i].Instance), l.Rollback.Checkpoint)
	}
}

// breaks marks each break of the axis on the lanes and the axis.
func (d *diagram) breaks() {
	for i := 1; i < len(d.ax.Parts); i++ {
		x := stLeft + (d.ax.Parts[i-1].X1+d.ax.Parts[i].X0)/2
		ys := []float64{d.axisY()}
		for j := range d.l.Lanes {
			ys = append(ys, d.laneY(j))
		}
		for _, y := range ys {
			d.c.Printf(`<g class="st-break"><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/></g>`,
				x-6, x-2, y+5, y-5, x+2, x+6, y+5, y-5)
		}
		d.c.Printf("\n")
	}
}

// events labels, above the lanes, the fault, its detection, the end of
// the recovery and a global rollback, each with its time from the fault.
func (d *diagram) events() {
	l := d.l
	bottom := d.axisY()
	if x, ok := d.x(l.Killed); ok {
		d.label(fmt.Sprintf("%s %s", orLost(l.Fault), l.Node), `class="st-killlabel"`, topSpots(x)...)
	}
	if x, ok := d.x(l.Detected); ok && !l.Detected.Equal(l.Killed) {
		d.c.Line(x, stTop-10, x, bottom, `class="st-detect"`)
		d.label("noticed "+since(l.Detected.Sub(l.Killed)), "", topSpots(x)...)
	}
	if x, ok := d.x(l.Done); ok && !l.Done.IsZero() {
		text := "caught up " + since(l.Done.Sub(l.Killed))
		if l.Rollback != nil {
			text = "restored " + since(l.Done.Sub(l.Killed))
		}
		d.label(text, "", topSpots(x)...)
	}
	if rb := l.Rollback; rb != nil {
		to := fmt.Sprintf("global checkpoint %d", rb.Checkpoint)
		if rb.Checkpoint == 0 {
			to = "the start"
		}
		text := fmt.Sprintf("every lane rolls back to %s; the sources read %s records again", to, human.Count(float64(rb.Records)))
		var spots []spot
		for _, s := range topSpots(stLeft) {
			if s.anchor == "start" {
				spots = append(spots, s)
			}
		}
		d.label(text, `class="st-restorelabel"`, spots...)
	}
}

// axis draws the time axis under the lanes, in time from the fault,
// with round ticks in each part.
func (d *diagram) axis() {
	l := d.l
	y := d.axisY()
	d.label("from the fault", "", spot{stLeft - 8, y + 14, "end"})
	for _, p := range d.ax.Parts {
		x0, _ := d.x(p.From)
		x1, _ := d.x(p.To)
		d.c.Line(x0, y, x1, y, `class="axis"`)
		lo, hi := float64(p.From.Sub(l.Killed))/1e6, float64(p.To.Sub(l.Killed))/1e6
		n := max(2, int((p.X1-p.X0)/110))
		step := plot.NiceStep(hi-lo, n)
		if step <= 0 {
			continue
		}
		for v := math.Ceil(lo/step) * step; v <= hi; v += step {
			x, ok := d.x(l.Killed.Add(time.Duration(v * 1e6)))
			if !ok {
				continue
			}
			d.c.Line(x, y, x, y+4, `class="axis"`)
			d.label(since(time.Duration(math.Round(v*1e6))), "", spot{x, y + 16, "middle"})
		}
	}
	d.c.Printf("\n")
}

// since is a time from the fault: "0", "+154 ms", "−4.9 s".
func since(dt time.Duration) string {
	switch {
	case dt == 0:
		return "0"
	case dt > 0:
		return "+" + human.Duration(dt)
	}
	return "−" + human.Duration(-dt)
}
