package job

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// emitted is a copy of one Emit call.
type emitted struct {
	Port  int
	From  KeyGroup
	Key   string
	Time  int64
	Value int64
	Data  string
}

func (e emitted) String() string {
	return fmt.Sprintf("port %d from %v key %q time %d value %d data %q", e.Port, e.From, e.Key, e.Time, e.Value, e.Data)
}

// recorder is an Emitter that keeps copies of what it gets.
type recorder struct{ out []emitted }

func (r *recorder) Emit(port int, from KeyGroup, rec Record) {
	r.out = append(r.out, emitted{port, from, string(rec.Key), rec.Time, rec.Value, string(rec.Data)})
}

// take returns what was emitted since the last take.
func (r *recorder) take() []emitted {
	out := r.out
	r.out = nil
	return out
}

func testSpec(window, lateness int64, groups, rollups int) *Spec {
	s := WindowCount(nil, window, lateness)
	s.Groups, s.Rollups = groups, rollups
	return &s
}

// countOut is what count emits for one fired window: first to rollup (port
// 0), then to the sink (port 1).
func countOut(spec *Spec, kg KeyGroup, key string, window, count, sum, total int64) []emitted {
	res := Result{Op: KindCount, Key: key, Window: window, Count: count, Sum: sum, Total: total}
	return []emitted{
		{Port: 0, From: kg, Key: GroupName([]byte(key), spec.Rollups), Time: window, Value: count,
			Data: string(appendRollupInput(nil, key, count, sum))},
		{Port: 1, From: kg, Key: key, Time: window, Value: count, Data: string(res.AppendCompact(nil))},
	}
}

func checkEmitted(t *testing.T, step string, got, want []emitted) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: emitted %d records, want %d", step, len(got), len(want))
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		mark := " "
		if g != w {
			mark = "!"
		}
		fmt.Fprintf(&b, "\n%s got  %s\n%s want %s", mark, g, mark, w)
	}
	t.Fatal(b.String())
}

// TestCountFiresInCanonicalOrder: windows fire by start, then key hash
// (Hash: a < c < b here), then key, whatever the key groups and the order
// the records came in.
func TestCountFiresInCanonicalOrder(t *testing.T) {
	spec := testSpec(10, 0, 8, 4)
	c := NewCount(spec)
	var out recorder
	rec := func(kg KeyGroup, key string, t, v int64) {
		c.Process(kg, Record{Key: []byte(key), Time: t, Value: v}, &out)
	}
	// Keys in two key groups; the hash order (a < c < b) differs from the
	// key group order (b and c in kg 1, a in kg 6) and from the key order.
	rec(1, "b", 1, 5)
	rec(1, "b", 12, 1)
	rec(6, "a", 5, 2)
	rec(6, "a", 9, 3)
	rec(1, "c", -3, 7)
	rec(6, "a", 15, 4)
	checkEmitted(t, "process", out.take(), nil)
	if got := c.Groups(); !slices.Equal(got, []KeyGroup{1, 6}) {
		t.Fatalf("Groups() = %v, want [kg1 kg6]", got)
	}

	c.Advance(-1, &out)
	checkEmitted(t, "advance(-1): window [-10,0) still open", out.take(), nil)

	c.Advance(9, &out)
	checkEmitted(t, "advance(9)", out.take(), countOut(spec, 1, "c", -10, 1, 7, 1))

	c.Advance(9, &out)
	c.Advance(5, &out)
	checkEmitted(t, "advance(9) again, then back to 5", out.take(), nil)

	c.Advance(10, &out)
	checkEmitted(t, "advance(10)", out.take(), slices.Concat(
		countOut(spec, 6, "a", 0, 2, 5, 2),
		countOut(spec, 1, "b", 0, 1, 5, 1),
	))

	// A record of a fired window: counted and dropped. A record at an
	// earlier time than the watermark whose window is still open is not
	// late (count's own records to rollup carry the window start).
	rec(6, "a", 3, 100)
	if c.Late() != 1 {
		t.Fatalf("Late() = %d, want 1", c.Late())
	}
	c.Advance(15, &out)
	rec(1, "c", 11, 6)
	rec(1, "c", 25, 1)
	if c.Late() != 1 {
		t.Fatalf("Late() = %d, want 1", c.Late())
	}

	c.Advance(MaxWatermark, &out)
	checkEmitted(t, "advance(max)", out.take(), slices.Concat(
		countOut(spec, 6, "a", 10, 1, 4, 3),
		countOut(spec, 1, "c", 10, 1, 6, 2),
		countOut(spec, 1, "b", 10, 1, 1, 2),
		countOut(spec, 1, "c", 20, 1, 1, 3),
	))
	c.Advance(MaxWatermark, &out)
	checkEmitted(t, "advance(max) again", out.take(), nil)
}

func TestCountSinkLine(t *testing.T) {
	spec := testSpec(1000, 0, 128, 64)
	c := NewCount(spec)
	var out recorder
	key := []byte("user-1")
	kg := GroupOf(key, spec.Groups)
	for _, v := range []int64{3, 4} {
		c.Process(kg, Record{Key: key, Time: 1500, Value: v}, &out)
	}
	key[0] = 'X' // the key is borrowed: count must have copied it
	c.Advance(2000, &out)
	got := out.take()
	want := `{"op":"count","key":"user-1","window":1000,"count":2,"sum":7,"total":2}`
	if len(got) != 2 {
		t.Fatalf("emitted %v, want 2 records", got)
	}
	var line bytes.Buffer
	s := NewSink(&line)
	s.Process(got[1].From, Record{Key: []byte(got[1].Key), Time: got[1].Time, Value: got[1].Value, Data: []byte(got[1].Data)}, nil)
	if err := s.Flush(); err != nil || line.String() != want+"\n" {
		t.Fatalf("sink line %q (%v), want %s", line.String(), err, want)
	}
	if got[0].Key != GroupName([]byte("user-1"), 64) || got[0].From != kg {
		t.Fatalf("rollup record %v: want key %s from %v", got[0], GroupName([]byte("user-1"), 64), kg)
	}
}

func TestCountEndOfTime(t *testing.T) {
	// Windows at the very top of int64 end past MaxInt64: they fire at
	// MaxWatermark, not never.
	spec := testSpec(1000, 0, 4, 2)
	c := NewCount(spec)
	var out recorder
	c.Process(0, Record{Key: []byte("k"), Time: math.MaxInt64 - 1, Value: 1}, &out)
	c.Process(0, Record{Key: []byte("k"), Time: math.MinInt64 + 5000, Value: 1}, &out)
	c.Advance(math.MaxInt64-1, &out)
	if got := out.take(); len(got) != 2 || got[0].Time != WindowStart(math.MinInt64+5000, 1000) {
		t.Fatalf("advance(max-1): emitted %v, want only the earliest window", got)
	}
	c.Advance(MaxWatermark, &out)
	if got := out.take(); len(got) != 2 || got[0].Time != WindowStart(math.MaxInt64-1, 1000) {
		t.Fatalf("advance(max): emitted %v, want the last window", got)
	}
}

func TestCountProcessDoesNotAllocateForKnownKeys(t *testing.T) {
	spec := testSpec(1000, 0, 128, 64)
	c := NewCount(spec)
	var out recorder
	keys := make([][]byte, 100)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
		c.Process(GroupOf(keys[i], 128), Record{Key: keys[i], Time: 0, Value: 1}, &out)
	}
	i := 0
	n := testing.AllocsPerRun(1000, func() {
		k := keys[i%len(keys)]
		c.Process(GroupOf(k, 128), Record{Key: k, Time: int64(i % 900), Value: 1}, &out)
		i++
	})
	if n != 0 {
		t.Fatalf("Process: %v allocations per record, want 0", n)
	}
}

func TestRollupInputCodec(t *testing.T) {
	for _, k := range weirdKeys {
		for _, cs := range [][2]int64{{1, 0}, {7, -3}, {math.MaxInt64, math.MinInt64}} {
			b := appendRollupInput(nil, k, cs[0], cs[1])
			key, count, sum, err := decodeRollupInput(b)
			if err != nil || string(key) != k || count != cs[0] || sum != cs[1] {
				t.Fatalf("(%q, %d, %d) decodes as (%q, %d, %d, %v)", k, cs[0], cs[1], key, count, sum, err)
			}
		}
	}
	good := appendRollupInput(nil, "key", 2, 5)
	bad := map[string][]byte{
		"empty":          nil,
		"bad length":     {0xff},
		"key too long":   {10, 'a'},
		"no count":       good[:4],
		"zero count":     appendRollupInput(nil, "key", 0, 5),
		"no sum":         good[:5],
		"trailing bytes": append(bytes.Clone(good), 0),
	}
	for name, b := range bad {
		if _, _, _, err := decodeRollupInput(b); err == nil {
			t.Errorf("%s: %x decodes", name, b)
		}
	}
}

// TestFireGroupsFiresOnlyThoseGroups: FireGroups fires the windows up to
// wm of the key groups it is given, as Advance would, and nothing else;
// the operator's watermark does not move, and Advance later fires the
// rest once, the given groups' windows not again. Count and rollup both.
func TestFireGroupsFiresOnlyThoseGroups(t *testing.T) {
	spec := testSpec(200, 0, 8, 4)
	type firer interface {
		Keyed
		GroupFirer
	}
	for _, op := range []struct {
		name string
		new  func() firer
	}{
		{"count", func() firer { return NewCount(spec) }},
		{"rollup", func() firer { return NewRollup(spec) }},
	} {
		t.Run(op.name, func(t *testing.T) {
			feed := func(k firer) {
				for kg := range KeyGroup(4) {
					for i, ts := range []int64{4010, 4150, 4250} {
						key := []byte(fmt.Sprintf("k%d-%d", kg, i))
						rec := Record{Key: key, Time: ts, Value: 1}
						if op.name == "rollup" {
							rec = Record{Key: []byte(GroupName(key, spec.Rollups)), Time: ts - ts%200, Value: 1, Data: appendRollupInput(nil, string(key), 1, 1)}
						}
						k.Process(kg, rec, nil)
					}
				}
			}
			whole, parts := op.new(), op.new()
			feed(whole)
			feed(parts)
			var all, early, late recorder
			whole.Advance(4200, &all)
			given := func(kg KeyGroup) bool { return kg == 1 || kg == 2 }
			parts.FireGroups(given, 4200, &early)
			for _, e := range early.out {
				if !given(e.From) || e.Time >= 4200 {
					t.Fatalf("FireGroups fired %v: not of key groups 1 and 2 up to 4200", e)
				}
			}
			if len(early.out) == 0 {
				t.Fatal("FireGroups fired nothing")
			}
			parts.Advance(4180, &late) // below the fired windows' end: nothing
			if len(late.out) != 0 {
				t.Fatalf("the watermark moved with FireGroups: Advance(4180) fired %v", late.out)
			}
			parts.Advance(4200, &late)
			var rest []emitted
			for _, e := range all.out {
				if !given(e.From) {
					rest = append(rest, e)
				}
			}
			checkEmitted(t, "Advance after FireGroups", late.out, rest)
			var mine []emitted
			for _, e := range all.out {
				if given(e.From) {
					mine = append(mine, e)
				}
			}
			checkEmitted(t, "FireGroups", early.out, mine)
		})
	}
}
