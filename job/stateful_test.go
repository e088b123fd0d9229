package job

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"spate/state"
)

// fill gives a count instance some keys with several open windows, and
// fires a few of them so that totals are not zero.
func fill(c *Count, spec *Spec, n int) {
	var out recorder
	for i := range n {
		key := fmt.Appendf(nil, "k%d", i)
		kg := GroupOf(key, spec.Groups)
		for _, t := range []int64{5, 15, 25, int64(i % 40), 45 - int64(i%3)} {
			c.Process(kg, Record{Key: key, Time: t, Value: int64(i)}, &out)
		}
	}
	c.Advance(10, &out)
}

func fillRollup(r *Rollup, spec *Spec, n int) {
	var out recorder
	for i := range n {
		group := GroupName(fmt.Appendf(nil, "k%d", i), spec.Rollups)
		kg := GroupOf([]byte(group), spec.Groups)
		for _, w := range []int64{0, 10, 20, 30 + int64(i%4)*10} {
			r.Process(kg, rollupIn(group, fmt.Sprintf("k%d", i), w, int64(1+i%5), int64(i)), &out)
		}
	}
	r.Advance(10, &out)
}

// TestRestoreReproducesState: a full capture restored into a fresh
// instance captures to the same bytes, and both instances then emit the
// same.
func TestRestoreReproducesState(t *testing.T) {
	spec := testSpec(10, 0, 8, 5)
	for _, tc := range []struct {
		name string
		mk   func() Stateful
		fill func(Stateful)
	}{
		{KindCount, func() Stateful { return NewCount(spec) }, func(s Stateful) { fill(s.(*Count), spec, 50) }},
		{KindRollup, func() Stateful { return NewRollup(spec) }, func(s Stateful) { fillRollup(s.(*Rollup), spec, 50) }},
		// Windows of 1 ms: a key group has many window starts open.
		{"count, many windows", func() Stateful { return NewCount(testSpec(1, 0, 8, 5)) }, func(s Stateful) { fill(s.(*Count), spec, 200) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.mk()
			tc.fill(a)
			groups := a.Capture(true).Encode(nil)
			b := tc.mk()
			if err := b.Restore(state.WholeGroups(groups)); err != nil {
				t.Fatal(err)
			}
			again := b.Capture(true).Encode(nil)
			if !reflect.DeepEqual(groups, again) {
				t.Fatal("the restored instance captures differently")
			}
			var outA, outB recorder
			for _, wm := range []int64{10, 20, 30, MaxWatermark} {
				a.Advance(wm, &outA)
				b.Advance(wm, &outB)
				checkEmitted(t, fmt.Sprintf("advance(%d)", wm), outB.take(), outA.take())
			}
		})
	}
}

func TestRestoreErrors(t *testing.T) {
	spec := testSpec(10, 0, 8, 5)
	src := NewCount(spec)
	fill(src, spec, 30)
	good := src.Capture(true).Encode(nil)
	if len(good) < 2 {
		t.Fatalf("want at least two groups, have %d", len(good))
	}
	kv := good[0].KVs()[0]
	mod := func(f func(gs []state.GroupData) []state.GroupData) []state.GroupData {
		gs := make([]state.GroupData, len(good))
		for i := range gs {
			gs[i] = state.GroupData{KG: good[i].KG, Entries: slices.Clone(good[i].KVs())}
		}
		return f(gs)
	}
	cases := []struct {
		name   string
		groups []state.GroupData
		want   error
	}{
		{"out of range", mod(func(gs []state.GroupData) []state.GroupData {
			return append(gs, state.GroupData{KG: spec.Groups})
		}), nil},
		{"twice", mod(func(gs []state.GroupData) []state.GroupData { return append(gs, gs[0]) }), ErrGroupHeld},
		{"deletion", mod(func(gs []state.GroupData) []state.GroupData {
			gs[1].Entries[0] = state.KV{Key: gs[1].Entries[0].Key, Deleted: true}
			return gs
		}), state.ErrCorrupt},
		{"key of another group", mod(func(gs []state.GroupData) []state.GroupData {
			gs[1].Entries[0].Key = kv.Key
			return gs
		}), state.ErrCorrupt},
		{"bad value", mod(func(gs []state.GroupData) []state.GroupData {
			gs[1].Entries[0].Value = []byte{0xff}
			return gs
		}), state.ErrCorrupt},
		{"trailing bytes", mod(func(gs []state.GroupData) []state.GroupData {
			gs[1].Entries[0].Value = append(slices.Clone(gs[1].Entries[0].Value), 0)
			return gs
		}), state.ErrCorrupt},
	}
	for _, c := range cases {
		dst := NewCount(spec)
		err := dst.Restore(state.WholeGroups(c.groups))
		if err == nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: Restore = %v, want %v", c.name, err, c.want)
		}
		if len(dst.Groups()) != 0 {
			t.Errorf("%s: a failed Restore changed the instance: %v", c.name, dst.Groups())
		}
	}
	// A group the instance already holds.
	dst := NewCount(spec)
	if err := dst.Restore(state.WholeGroups(good[:1])); err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(state.WholeGroups(good)); !errors.Is(err, ErrGroupHeld) {
		t.Fatalf("Restore of a held group: %v", err)
	}
	if err := dst.Restore(state.WholeGroups(good[1:])); err != nil {
		t.Fatalf("Restore adding groups: %v", err)
	}
	if !slices.Equal(dst.Groups(), src.Groups()) {
		t.Fatalf("Groups %v, want %v", dst.Groups(), src.Groups())
	}
}

func TestCountValueCodec(t *testing.T) {
	spec := testSpec(10, 0, 8, 5)
	c := NewCount(spec)
	for _, k := range []countKey{
		{},
		{total: 7},
		{total: 3, cur: countWin{start: 20, count: 2, sum: -5}},
		{total: math.MaxInt64, cur: countWin{start: 30, count: 1, sum: 1}, older: []countWin{{start: 10, count: 4, sum: 9}, {start: -20, count: 1}}},
	} {
		b := appendCountKey(nil, &k)
		var back countKey
		err := c.decodeKey([]byte("key"), b, &back)
		k.group = int32(groupIndex([]byte("key"), spec.Rollups))
		if err != nil || !reflect.DeepEqual(back, k) {
			t.Fatalf("%+v decodes as %+v, %v", k, back, err)
		}
	}
	bad := map[string]countKey{
		"negative total": {total: -1},
		"count 0":        {cur: countWin{start: 10, count: 0}, older: []countWin{{start: 0, count: 1}}},
		"unaligned":      {cur: countWin{start: 15, count: 1}},
		"older is later": {cur: countWin{start: 10, count: 1}, older: []countWin{{start: 20, count: 1}}},
		"same start":     {cur: countWin{start: 10, count: 1}, older: []countWin{{start: 0, count: 1}, {start: 0, count: 1}}},
	}
	for name, k := range bad {
		b := appendCountKey(nil, &k)
		if name == "count 0" { // appendCountKey would drop it: write it by hand
			b = []byte{0, 2, 20, 0, 0, 0, 2, 0}
		}
		if err := c.decodeKey([]byte("key"), b, new(countKey)); err == nil {
			t.Errorf("%s: %x decodes", name, b)
		}
	}
}

func TestRollupValueCodec(t *testing.T) {
	spec := testSpec(10, 0, 8, 5)
	r := NewRollup(spec)
	g := rollupGroup{wins: []rollupWin{
		{start: 10, count: 5, sum: 3, top: [3]TopKey{{"b", 3}, {"a", 1}, {"c", 1}}, ntop: 3},
		{start: -10, count: 1, sum: -1, top: [3]TopKey{{"\xff", 1}}, ntop: 1},
		{start: 0},
	}}
	back, err := r.decodeGroup(nil, appendRollupGroup(nil, &g))
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("%+v decodes as %+v, %v", g, back, err)
	}
	for name, bg := range map[string]rollupGroup{
		"unaligned":    {wins: []rollupWin{{start: 5}}},
		"same start":   {wins: []rollupWin{{start: 10}, {start: 10}}},
		"top order":    {wins: []rollupWin{{start: 10, top: [3]TopKey{{"a", 1}, {"b", 2}}, ntop: 2}}},
		"top tie":      {wins: []rollupWin{{start: 10, top: [3]TopKey{{"b", 1}, {"a", 1}}, ntop: 2}}},
		"top missing":  {wins: []rollupWin{{start: 10, top: [3]TopKey{{"a", 1}}, ntop: 1}}},
		"top count 0":  {wins: []rollupWin{{start: 10, top: [3]TopKey{{"a", 0}}, ntop: 1}}},
		"4 top keys":   {wins: []rollupWin{{start: 10, ntop: 0}}},
		"key too long": {wins: []rollupWin{{start: 10, ntop: 0}}},
		"key past end": {wins: []rollupWin{{start: 10, ntop: 0}}},
	} {
		b := appendRollupGroup(nil, &bg)
		switch name {
		case "4 top keys":
			b = []byte{1, 20, 0, 0, 4}
		case "top missing":
			b = b[:len(b)-1]
		case "key too long":
			b = []byte{1, 20, 0, 0, 1, 9, 'a'}
		case "key past end": // the length counts its own byte (found by FuzzRollupValue)
			b = []byte{1, 20, 0, 0, 1, 2, 'a'}
		}
		if _, err := r.decodeGroup(nil, b); err == nil {
			t.Errorf("%s: %x decodes", name, b)
		}
	}
}

func TestDropGroups(t *testing.T) {
	spec := testSpec(10, 0, 8, 5)
	c := NewCount(spec)
	fill(c, spec, 30)
	groups := c.Groups()
	c.Capture(true).Done()
	c.DropGroups(groups[:2])
	if got := c.Groups(); !slices.Equal(got, groups[2:]) {
		t.Fatalf("Groups after DropGroups = %v, want %v", got, groups[2:])
	}
	delta := c.Capture(false).Encode(nil)
	if len(delta) != 2 || !delta[0].Reset || !delta[1].Reset || delta[0].Len()+delta[1].Len() != 0 {
		t.Fatalf("delta after dropping two groups: %+v", delta)
	}
	var out recorder
	c.Advance(MaxWatermark, &out)
	for _, e := range out.take() {
		if slices.Contains(groups[:2], e.From) {
			t.Fatalf("a dropped group fired: %v", e)
		}
	}
	r := NewRollup(spec)
	fillRollup(r, spec, 30)
	rg := r.Groups()
	r.DropGroups(rg[:1])
	r.Advance(MaxWatermark, &out)
	for _, e := range out.take() {
		if e.From == rg[0] {
			t.Fatalf("a dropped rollup group fired: %v", e)
		}
	}
}

// TestProcessDuringEncode runs the encoding of a capture concurrently with
// Process and Advance (run it with -race) and checks that the encoding is
// the state as of the capture.
func TestProcessDuringEncode(t *testing.T) {
	spec := testSpec(10, 0, 16, 5)
	a, b := NewCount(spec), NewCount(spec)
	fill(a, spec, 2000)
	fill(b, spec, 2000)
	ca := a.Capture(true)
	want := b.Capture(true).Encode(nil) // the same state, encoded at rest
	done := make(chan []state.GroupData)
	go func() { done <- ca.Encode(nil) }()
	var out nopEmitter
	var got []state.GroupData
	for i := 0; got == nil; i++ {
		select {
		case got = <-done:
		default:
			key := fmt.Appendf(nil, "k%d", i%2500)
			a.Process(GroupOf(key, spec.Groups), Record{Key: key, Time: int64(20 + i%50), Value: 1}, &out)
			if i%500 == 0 {
				a.Advance(int64(20+i/500), &out)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the capture encoded during processing is not the state as of the capture")
	}
}

func FuzzCountValue(f *testing.F) {
	k := countKey{total: 3, cur: countWin{start: 30, count: 1, sum: 1}, older: []countWin{{start: 10, count: 4, sum: 9}}}
	f.Add(appendCountKey(nil, &k))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := NewCount(testSpec(10, 0, 4, 2))
		var v, v2 countKey
		if err := c.decodeKey([]byte("k"), b, &v); err != nil {
			return
		}
		if again := appendCountKey(nil, &v); !bytes.Equal(again, b) {
			if err := c.decodeKey([]byte("k"), again, &v2); err != nil || !reflect.DeepEqual(v, v2) {
				t.Fatalf("%x decodes to %+v, which does not round-trip", b, v)
			}
		}
	})
}

func FuzzRollupValue(f *testing.F) {
	g := rollupGroup{wins: []rollupWin{{start: 10, count: 5, sum: 3, top: [3]TopKey{{"b", 3}, {"a", 1}}, ntop: 2}}}
	f.Add(appendRollupGroup(nil, &g))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewRollup(testSpec(10, 0, 4, 2))
		v, err := r.decodeGroup(nil, b)
		if err != nil {
			return
		}
		if v2, err := r.decodeGroup(nil, appendRollupGroup(nil, &v)); err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("%x decodes to %+v, which does not round-trip", b, v)
		}
	})
}
