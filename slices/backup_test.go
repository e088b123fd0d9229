package slices

import (
	"errors"
	"strings"
	"testing"

	"spate/job"
	"spate/wire"
)

func pos(p, kg int, seq uint64) wire.Position {
	return wire.Position{P: job.MakeProducer(0, p), KG: job.KeyGroup(kg), Seq: seq}
}

func mustSlice(t *testing.T, up job.InstanceID, rg job.Range, ps ...wire.Position) BackupSlice {
	t.Helper()
	b, err := NewBackupSlice(up, rg, ps)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBackupSliceSplitMerge(t *testing.T) {
	b := mustSlice(t, "source#0", r(0, 8), pos(1, 7, 70), pos(0, 2, 20), pos(1, 2, 21), pos(0, 4, 40))
	if got := b.String(); got != "source#0→[0,8) (4 positions)" {
		t.Errorf("String() = %q", got)
	}
	lo, hi, err := b.Split(4)
	if err != nil {
		t.Fatal(err)
	}
	if lo.Range != r(0, 4) || hi.Range != r(4, 8) || len(lo.Positions) != 2 || len(hi.Positions) != 2 {
		t.Fatalf("split: %v %v", lo, hi)
	}
	if s, ok := hi.Position(job.MakeProducer(0, 0), 4); !ok || s != 40 {
		t.Errorf("hi position of p0.0 kg4 = %d, %v", s, ok)
	}
	if _, ok := lo.Position(job.MakeProducer(0, 0), 4); ok {
		t.Error("lo has kg4's position")
	}
	lo.Positions[0].Seq = 999 // the halves share nothing with b
	if s, _ := b.Position(job.MakeProducer(0, 0), 2); s != 20 {
		t.Errorf("Split shares positions with its argument: %d", s)
	}
	lo.Positions[0].Seq = 20
	m, err := Merge(hi, lo) // either order
	if err != nil {
		t.Fatal(err)
	}
	if m.Range != b.Range || len(m.Positions) != len(b.Positions) {
		t.Fatalf("merge: %v", m)
	}
	for i := range m.Positions {
		if m.Positions[i] != b.Positions[i] {
			t.Errorf("position %d: %+v, want %+v", i, m.Positions[i], b.Positions[i])
		}
	}
}

func TestBackupSliceErrors(t *testing.T) {
	a := mustSlice(t, "source#0", r(0, 4), pos(0, 1, 5))
	b := mustSlice(t, "source#0", r(4, 8))
	c := mustSlice(t, "source#0", r(5, 8))
	d := mustSlice(t, "source#0", r(2, 6))
	e := mustSlice(t, "source#1", r(4, 8))
	cases := []struct {
		name string
		do   func() error
		is   error
		err  string
	}{
		{name: "merge with a gap", do: func() error { _, err := Merge(a, c); return err }, is: ErrMerge, err: "[0,4) and [5,8) are not adjacent"},
		{name: "merge overlapping", do: func() error { _, err := Merge(d, a); return err }, is: ErrMerge, err: "[0,4) and [2,6) overlap"},
		{name: "merge with itself", do: func() error { _, err := Merge(a, a); return err }, is: ErrMerge, err: "overlap"},
		{name: "merge of two upstreams", do: func() error { _, err := Merge(a, e); return err }, is: ErrMerge, err: "different upstreams"},
		{name: "split at Lo", do: func() error { _, _, err := a.Split(0); return err }, is: ErrMerge, err: "not strictly inside"},
		{name: "split at Hi", do: func() error { _, _, err := a.Split(4); return err }, is: ErrMerge, err: "not strictly inside"},
		{name: "position outside", do: func() error { _, err := NewBackupSlice("source#0", r(0, 4), []wire.Position{pos(0, 4, 1)}); return err }, is: ErrInvalid, err: "position 0 (p0.0 kg4) is outside the range"},
		{name: "position twice", do: func() error {
			_, err := NewBackupSlice("source#0", r(0, 4), []wire.Position{pos(0, 1, 1), pos(0, 1, 2)})
			return err
		}, is: ErrInvalid, err: "position 1 (p0.0 kg1) is out of order or repeated"},
		{name: "empty range", do: func() error { _, err := NewBackupSlice("source#0", r(3, 3), nil); return err }, is: ErrInvalid, err: "range [3,3) is empty"},
		{name: "recut with a hole in the slices", do: func() error { _, err := Recut([]BackupSlice{a, c}, []job.Range{r(0, 8)}); return err }, is: ErrMerge, err: "kg4 is in cut [0,8) but in no slice"},
		{name: "recut with a hole in the cuts", do: func() error { _, err := Recut([]BackupSlice{a, b}, []job.Range{r(0, 3), r(4, 8)}); return err }, is: ErrMerge, err: "kg3 is in slice [3,4) but in no cut"},
		{name: "recut short of the end", do: func() error { _, err := Recut([]BackupSlice{a, b}, []job.Range{r(0, 6)}); return err }, is: ErrMerge, err: "kg6 is in slice [6,8) but in no cut"},
		{name: "recut of two upstreams", do: func() error { _, err := Recut([]BackupSlice{a, e}, []job.Range{r(0, 8)}); return err }, is: ErrMerge, err: "slices of source#0 and source#1"},
		{name: "recut of overlapping slices", do: func() error { _, err := Recut([]BackupSlice{a, d}, []job.Range{r(0, 6)}); return err }, is: ErrMerge, err: "overlap"},
		{name: "recut to overlapping cuts", do: func() error { _, err := Recut([]BackupSlice{a, b}, []job.Range{r(0, 5), r(4, 8)}); return err }, is: ErrInvalid, err: "cuts [0,5) and [4,8) overlap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want %v with %q", err, c.is, c.err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestRecut(t *testing.T) {
	// Two slices toward count's 2 instances, recut for 4 (the plan of
	// 2→4: 0:[0,32) 1:[64,96) 2:[32,64) 3:[96,128)), in the cuts' order.
	a := mustSlice(t, "source#1", r(0, 64), pos(0, 0, 1), pos(0, 40, 2))
	b := mustSlice(t, "source#1", r(64, 128), pos(0, 100, 3))
	cuts := []job.Range{r(64, 96), r(0, 32), r(96, 128), r(32, 64)}
	got, err := Recut([]BackupSlice{b, a}, cuts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cuts {
		if got[i].Range != c || got[i].Upstream != "source#1" {
			t.Errorf("slice %d: %v, want range %v", i, got[i], c)
		}
	}
	if len(got[0].Positions) != 0 || len(got[1].Positions) != 1 || len(got[2].Positions) != 1 || len(got[3].Positions) != 1 {
		t.Errorf("positions went astray: %v", got)
	}
	got[1].Positions[0].Seq = 99 // never shared with the arguments
	if a.Positions[0].Seq != 1 {
		t.Error("Recut shares positions with its arguments")
	}
	if out, err := Recut(nil, nil); err != nil || out != nil {
		t.Errorf("Recut(nil, nil) = %v, %v", out, err)
	}
}
