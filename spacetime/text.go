package spacetime

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The marks of the text diagram; Legend explains them.
const (
	markLane     = '─'
	markTick     = '┼'
	markRestored = '◆' // the checkpoint a lane was restored from
	markKill     = 'X'
	markDown     = '┈' // the instance is not running
	markCatchUp  = '━' // restored, catching up with its upstreams
	markRestore  = '↺'
	markDone     = '✓'
	markBreak    = '≈'
)

// Legend is the key of the marks Text draws.
const Legend = "┼ checkpoint, ◆ restored from, X fault, ┈ down, ↺ restored, ━ catching up, ✓ caught up, ▼ replay"

// gapCols is the width of an axis break in columns.
const gapCols = 3

// Text renders l as a space-time diagram in plain text: a title, one
// lane per instance with the rows between them for the replay arrows and
// their record counts, a row of times from the fault, and a line per
// event of the recovery, wrapped, then the key of the marks. No line is
// wider than width columns (each rune one column, every mark a single
// width one). The lane names keep their column while a third of the
// width, and at least ten columns, remain for the time; below that
// (about 30 columns for windowcount) they are cut short with an ellipsis.
func Text(l Loss, width int) string {
	width = max(width, 1)
	t := newTextDiagram(l, width)
	t.draw()
	var b strings.Builder
	for _, line := range t.lines() {
		b.WriteString(clip(line, width))
		b.WriteByte('\n')
	}
	return b.String()
}

// grid is a block of cells, each one rune.
type grid [][]rune

func newGrid(rows, cols int) grid {
	g := make(grid, rows)
	for i := range g {
		g[i] = []rune(strings.Repeat(" ", cols))
	}
	return g
}

func (g grid) set(r, c int, ch rune) {
	if r >= 0 && r < len(g) && c >= 0 && c < len(g[r]) {
		g[r][c] = ch
	}
}

func (g grid) get(r, c int) rune {
	if r >= 0 && r < len(g) && c >= 0 && c < len(g[r]) {
		return g[r][c]
	}
	return 0
}

// free says whether s fits at row r from column c, between lo and hi,
// onto blank cells and not against another label.
func (g grid) free(r, c int, s string, lo, hi int) bool {
	n := utf8.RuneCountInString(s)
	if c < lo || c+n > hi {
		return false
	}
	for i := c; i < c+n; i++ {
		if g.get(r, i) != ' ' {
			return false
		}
	}
	return !isText(g.get(r, c-1)) && !isText(g.get(r, c+n))
}

// isText says whether ch belongs to a label rather than to a line.
func isText(ch rune) bool {
	return unicode.IsLetter(ch) || unicode.IsDigit(ch) || strings.ContainsRune("+-.#", ch)
}

func (g grid) write(r, c int, s string) {
	for _, ch := range s {
		g.set(r, c, ch)
		c++
	}
}

// textDiagram is one Text being drawn.
type textDiagram struct {
	l      Loss
	width  int
	labW   int // the lane names' column
	ax     Axis
	g      grid     // rows: a gap row, then per lane its row and a gap row, then the times
	notes  []string // a line per event of the recovery, wrapped to the width
	legend []string // the key of the marks
	titled string
}

func newTextDiagram(l Loss, width int) *textDiagram {
	t := &textDiagram{l: l, width: width}
	for _, ln := range l.Lanes {
		t.labW = max(t.labW, utf8.RuneCountInString(laneName(ln))+1)
	}
	// Keep at least a third of the width, and ten columns, for the plot.
	if limit := width - max(width/3, 10); t.labW > limit {
		t.labW = max(limit, 0)
	}
	plotW := max(width-t.labW, 1)
	t.ax = l.Axis(float64(plotW-1), gapCols)
	t.g = newGrid(2*len(l.Lanes)+2, width)
	return t
}

func laneName(ln Lane) string {
	if ln.Node == "" {
		return ln.Instance
	}
	return ln.Instance + " " + ln.Node
}

func (t *textDiagram) laneRow(i int) int { return 1 + 2*i }
func (t *textDiagram) timeRow() int      { return len(t.g) - 1 }

// col is the column of time t, false if it is not drawn.
func (t *textDiagram) col(at time.Time) (int, bool) {
	if at.IsZero() {
		return 0, false
	}
	x, ok := t.ax.X(at)
	return t.labW + int(math.Round(x)), ok
}

// inPlot says whether column c is drawn time (not the names, not a break).
func (t *textDiagram) inPlot(c int) bool {
	if c < t.labW || c >= t.width {
		return false
	}
	for _, p := range t.ax.Parts {
		if c >= t.labW+int(math.Round(p.X0)) && c <= t.labW+int(math.Round(p.X1)) {
			return true
		}
	}
	return false
}

func (t *textDiagram) draw() {
	l := t.l
	for i, ln := range l.Lanes {
		r := t.laneRow(i)
		t.g.write(r, 0, clip(laneName(ln), t.labW-1))
		for c := t.labW; c < t.width; c++ {
			if t.inPlot(c) {
				t.g.set(r, c, markLane)
			}
		}
		t.down(r, ln)
		t.ticks(r, ln)
	}
	t.rollbacks()
	t.breaks()
	t.replays()
	for i, ln := range l.Lanes {
		t.marks(t.laneRow(i), ln)
	}
	t.labels()
	t.times()
	t.describe()
}

// span fills row r from time a to time b (exclusive of both ends' cells)
// with ch, where drawn.
func (t *textDiagram) span(r int, a, b time.Time, ch rune) {
	ca, _ := t.col(a)
	cb := t.width
	if !b.IsZero() {
		cb, _ = t.col(b)
	}
	for c := ca + 1; c < cb; c++ {
		if t.inPlot(c) {
			t.g.set(r, c, ch)
		}
	}
}

// down draws when the lane's instance was not running, and its catching
// up after a restore.
func (t *textDiagram) down(r int, ln Lane) {
	l := t.l
	if rb := l.Rollback; rb != nil {
		from := l.Detected
		if ln.Lost {
			from = l.Killed
		}
		t.span(r, from, rb.Restored, markDown)
		return
	}
	if !ln.Lost {
		return
	}
	rs := l.restoreOf(ln.Instance)
	if rs == nil {
		t.span(r, l.Killed, time.Time{}, markDown)
		return
	}
	t.span(r, l.Killed, rs.Restored, markDown)
	if !rs.Restored.IsZero() {
		t.span(r, rs.Restored, rs.Done, markCatchUp)
	}
}

func (t *textDiagram) ticks(r int, ln Lane) {
	id, at, restored := t.l.Restored(ln.Instance)
	for _, tk := range ln.Ticks {
		c, ok := t.col(tk.At)
		if !ok {
			continue
		}
		ch := markTick
		if restored && tk.ID == id && tk.At.Equal(at) {
			ch = markRestored
		}
		t.g.set(r, c, ch)
	}
}

// breaks marks each break of the axis on every lane and on the times row.
func (t *textDiagram) breaks() {
	for i := 1; i < len(t.ax.Parts); i++ {
		c := t.labW + int(math.Round((t.ax.Parts[i-1].X1+t.ax.Parts[i].X0)/2))
		for r := range t.g {
			if r == t.timeRow() || t.g.get(r, c-2) != ' ' || t.g.get(r, c+2) != ' ' {
				t.g.set(r, c, markBreak)
			}
		}
	}
}

// rollbacks draws, under --ft global, an arrow under each lane from its
// restore back to the global checkpoint it rolled back to.
func (t *textDiagram) rollbacks() {
	rb := t.l.Rollback
	if rb == nil || rb.Restored.IsZero() || rb.CheckpointAt.IsZero() {
		return
	}
	c0, ok0 := t.col(rb.CheckpointAt)
	c1, ok1 := t.col(rb.Restored)
	if !ok0 || !ok1 || c1-c0 < 3 {
		return
	}
	for i := range t.l.Lanes {
		r := t.laneRow(i) + 1
		t.g.set(r, c0+1, '◀')
		for c := c0 + 2; c < c1; c++ {
			if t.inPlot(c) {
				t.g.set(r, c, '╌')
			} else {
				t.g.set(r, c, ' ')
			}
		}
		t.g.set(r, c1, '┘')
	}
}

// marks draws the fault, the restore and the end of catching up of a lane.
func (t *textDiagram) marks(r int, ln Lane) {
	l := t.l
	if ln.Lost {
		if c, ok := t.col(l.Killed); ok {
			t.g.set(r, c, markKill)
		}
	}
	if rb := l.Rollback; rb != nil {
		if c, ok := t.col(rb.Restored); ok {
			t.g.set(r, c, markRestore)
		}
		return
	}
	if rs := l.restoreOf(ln.Instance); rs != nil {
		if c, ok := t.col(rs.Restored); ok {
			t.g.set(r, c, markRestore)
		}
		if c, ok := t.col(rs.Done); ok {
			t.g.set(r, c, markDone)
		}
	}
}

// replays draws each replay as a vertical arrow at its time from the
// upstream's lane to the restored lane, then its record count beside it
// in a row between lanes where there is room (the lines below list them
// all).
func (t *textDiagram) replays() {
	var drawn []textArrow
	for _, rp := range t.l.Replays {
		from, to := t.laneIndex(rp.From), t.laneIndex(rp.To)
		c0, ok := t.col(rp.At)
		if from < 0 || to < 0 || from == to || !ok {
			continue
		}
		r0, r1 := t.laneRow(from), t.laneRow(to)
		lo, hi := min(r0, r1), max(r0, r1)
		// The nearest column, right then left, that no other arrow uses
		// over these rows.
		c := -1
		for d := 0; d < 8 && c < 0; d++ {
			for _, cc := range []int{c0 + d, c0 - d} {
				if c >= 0 || !t.inPlot(cc) {
					continue
				}
				clash := false
				for _, u := range drawn {
					if u.c == cc && min(u.r0, u.r1) <= hi && lo <= max(u.r0, u.r1) {
						clash = true
					}
				}
				if !clash {
					c = cc
				}
			}
		}
		if c < 0 {
			continue
		}
		drawn = append(drawn, textArrow{c, r0, r1, count(rp.Records)})
		head, tail := '▼', '┬'
		if r1 < r0 {
			head, tail = '▲', '┴'
		}
		for r := lo; r <= hi; r++ {
			switch {
			case r == r0:
				t.g.set(r, c, tail)
			case r == r1:
				t.g.set(r, c, head)
			case (r-1)%2 == 0: // a lane crossed
				t.g.set(r, c, '┼')
			default:
				t.g.set(r, c, '│')
			}
		}
	}
	for _, a := range drawn {
		t.countLabel(a)
	}
}

// textArrow is a replay's arrow: its column, from row r0 to row r1, and
// the count to write beside it.
type textArrow struct {
	c, r0, r1 int
	label     string
}

// countLabel writes an arrow's count in a row between lanes on its way,
// nearest the upstream first, against the arrow on its right, else on
// its left, and never against another arrow, which would read as its
// count.
func (t *textDiagram) countLabel(a textArrow) {
	step := 1
	if a.r1 < a.r0 {
		step = -1
	}
	n := utf8.RuneCountInString(a.label)
	for r := a.r0 + step; r != a.r1; r += step {
		if (r-1)%2 == 0 {
			continue // a lane
		}
		for _, c := range []int{a.c + 1, a.c - n} {
			far := c + n // the side away from the arrow
			if c < a.c {
				far = c - 1
			}
			if t.g.free(r, c, a.label, t.labW, t.width) && (t.g.get(r, far) == ' ' || t.g.get(r, far) == 0) {
				t.g.write(r, c, a.label)
				return
			}
		}
	}
}

// labels writes the restored checkpoint's id beside its mark and the
// fault's verb above the first lost lane, where there is room.
func (t *textDiagram) labels() {
	l := t.l
	for i, ln := range l.Lanes {
		id, at, ok := l.Restored(ln.Instance)
		if !ok || at.IsZero() {
			continue
		}
		c, drawn := t.col(at)
		if !drawn {
			continue
		}
		s := fmt.Sprint(id)
		r := t.laneRow(i)
		if t.l.Rollback != nil && i > 0 {
			continue // one label says it for every lane
		}
		for _, rr := range []int{r - 1, r + 1} {
			if t.g.free(rr, c, s, t.labW, t.width) {
				t.g.write(rr, c, s)
				break
			}
			if t.g.free(rr, c-utf8.RuneCountInString(s)+1, s, t.labW, t.width) {
				t.g.write(rr, c-utf8.RuneCountInString(s)+1, s)
				break
			}
		}
	}
	verb := l.Fault
	if verb == "" {
		verb = "lost"
	}
	if c, ok := t.col(l.Killed); ok {
		for i, ln := range l.Lanes {
			if !ln.Lost {
				continue
			}
			for _, r := range []int{t.laneRow(i) - 1, 0} {
				for _, cc := range []int{c, c - utf8.RuneCountInString(verb) + 1} {
					if t.g.free(r, cc, verb, t.labW, t.width) {
						t.g.write(r, cc, verb)
						return
					}
				}
			}
			return
		}
	}
}

// times writes, on the last row, the times from the fault of the
// restored checkpoints, the fault and the end of the recovery.
func (t *textDiagram) times() {
	l := t.l
	r := t.timeRow()
	put := func(at time.Time) {
		c, ok := t.col(at)
		if !ok {
			return
		}
		s := since(at.Sub(l.Killed))
		for _, cc := range []int{c, c - utf8.RuneCountInString(s) + 1, c - utf8.RuneCountInString(s)/2} {
			if t.g.free(r, cc, s, t.labW, t.width) {
				t.g.write(r, cc, s)
				return
			}
		}
	}
	put(l.Killed)
	if !l.Done.IsZero() {
		put(l.Done)
	}
	for _, at := range l.restoredAt() {
		put(at)
	}
	t.g.write(r, 0, clip("from fault", t.labW-1))
}

// describe makes the lines under the diagram: one per event of the
// recovery, and the key of the marks.
func (t *textDiagram) describe() {
	l := t.l
	verb := l.Fault
	if verb == "" {
		verb = "no fault recorded"
	}
	t.titled = fmt.Sprintf("%s lost at %s (%s), noticed %s: %s", l.Node, jobTime(l.Killed.Sub(l.Origin)), verb,
		since(l.Detected.Sub(l.Killed)), strings.Join(l.Lost(), ", "))
	if rb := l.Rollback; rb != nil {
		t.notes = append(t.notes, rollbackNote(l, *rb))
	}
	for _, rs := range l.Restores {
		t.notes = append(t.notes, restoreNote(l, rs))
	}
	if len(l.Split) > 0 {
		t.notes = append(t.notes, "÷ split: "+strings.Join(l.Split, ", "))
	}
	for _, rp := range l.Replays {
		t.notes = append(t.notes, fmt.Sprintf("▼ %s → %s: %s records replayed (%s)", rp.From, rp.To, count(rp.Records), since(rp.At.Sub(l.Killed))))
	}
	if t.ax.Broken() {
		t.notes = append(t.notes, fmt.Sprintf("%c %s of time skipped", markBreak, dur(t.ax.Skipped())))
	}
	t.legend = wrap(strings.Split(Legend, ", "), "  ", t.width)
}

// rollbackNote says what a global rollback did, in times from the fault.
func rollbackNote(l Loss, rb Rollback) string {
	s := fmt.Sprintf("%c every lane rolled back to global checkpoint %d", markRestore, rb.Checkpoint)
	if rb.Checkpoint == 0 {
		s = fmt.Sprintf("%c every lane rolled back to the start of the job", markRestore)
	}
	if !rb.CheckpointAt.IsZero() {
		s += " (" + since(rb.CheckpointAt.Sub(l.Killed)) + ")"
	}
	if len(rb.Unusable) > 0 {
		word := "global checkpoint "
		if len(rb.Unusable) > 1 {
			word = "global checkpoints "
		}
		s += ", " + word + ids(rb.Unusable) + " found damaged"
	}
	if !rb.Restored.IsZero() {
		s += ", restored " + since(rb.Restored.Sub(l.Killed))
	}
	return s + fmt.Sprintf("; the sources read %s records again", count(rb.Records))
}

// restoreNote says where a lost instance went, from which checkpoint,
// and when it was restored and caught up, in times from the fault.
func restoreNote(l Loss, rs Restore) string {
	at := func(x time.Time) string { return since(x.Sub(l.Killed)) }
	s := fmt.Sprintf("%c %s on %s", markRestore, rs.Instance, rs.Node)
	switch {
	case rs.Restored.IsZero():
		s += ": never restored"
	case rs.Checkpoint == 0:
		s += ": from nothing, restored " + at(rs.Restored)
	default:
		s += fmt.Sprintf(" from checkpoint %d", rs.Checkpoint)
		if !rs.CheckpointAt.IsZero() {
			s += " (" + at(rs.CheckpointAt) + ")"
		}
		if rs.Fellback {
			s += ", the latest damaged"
		}
		s += ", restored " + at(rs.Restored)
	}
	if !rs.Done.IsZero() {
		s += ", caught up " + at(rs.Done)
	} else if !rs.Restored.IsZero() {
		s += ", never caught up"
	}
	return s
}

// wrap packs items into lines of at most width runes, sep between two on
// a line.
func wrap(items []string, sep string, width int) []string {
	var out []string
	line := ""
	for _, it := range items {
		switch {
		case line == "":
			line = it
		case utf8.RuneCountInString(line+sep+it) <= width:
			line += sep + it
		default:
			out = append(out, line)
			line = it
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

func (t *textDiagram) lines() []string {
	out := []string{t.titled}
	for _, row := range t.g {
		out = append(out, strings.TrimRight(string(row), " "))
	}
	for _, n := range t.notes {
		out = append(out, wrapWords(n, t.width)...)
	}
	return append(out, t.legend...)
}

// wrapWords breaks s at spaces into lines of at most width runes, the
// lines after the first indented by two; a word too long is clipped.
func wrapWords(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
			if len(out) > 0 {
				line = "  " + w
			}
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			out = append(out, line)
			line = "  " + w
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

func (t *textDiagram) laneIndex(id string) int {
	for i, ln := range t.l.Lanes {
		if ln.Instance == id {
			return i
		}
	}
	return -1
}

func (l Loss) restoreOf(id string) *Restore {
	for i := range l.Restores {
		if l.Restores[i].Instance == id {
			return &l.Restores[i]
		}
	}
	return nil
}

// clip cuts s to at most n runes, the last one an ellipsis if cut.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// since is a time from the fault: "0", "+154ms", "-4.9s".
func since(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d > 0:
		return "+" + dur(d)
	}
	return "-" + dur(-d)
}

// dur is a duration in the unit that fits: "850µs", "154ms", "4.9s".
func dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Second:
		if d < time.Second {
			return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
		}
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// jobTime is a time since the job started: "5.00s".
func jobTime(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// count is a number of records: 670, 26.3k, 1.2M.
func count(n uint64) string {
	switch {
	case n < 10000:
		return fmt.Sprint(n)
	case n < 1000000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// ids are checkpoint ids as a list: "3", "3 and 2", "4, 3 and 2".
func ids(xs []uint64) string {
	var ss []string
	for _, x := range xs {
		ss = append(ss, fmt.Sprint(x))
	}
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " and " + ss[len(ss)-1]
}
