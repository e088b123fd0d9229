package state

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{{FullEvery: 0}, {FullEvery: 1, MaxChainRatio: -1}, {FullEvery: 1, MaxChainRatio: math.NaN()}} {
		if err := c.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: Validate = %v", c, err)
		}
	}
}

func TestWantFull(t *testing.T) {
	cfg := Config{FullEvery: 4, MaxChainRatio: 1}
	cases := []struct {
		name string
		st   ChainState
		want bool
	}{
		{"no base", ChainState{}, true},
		{"fresh base", ChainState{Base: true, BaseSize: 100}, false},
		{"two deltas", ChainState{Base: true, Deltas: 2, BaseSize: 100, DeltaSize: 50}, false},
		{"three deltas: the 4th is full", ChainState{Base: true, Deltas: 3, BaseSize: 100, DeltaSize: 50}, true},
		{"deltas as big as the base", ChainState{Base: true, Deltas: 1, BaseSize: 100, DeltaSize: 100}, false},
		{"deltas bigger than the base", ChainState{Base: true, Deltas: 1, BaseSize: 100, DeltaSize: 101}, true},
		{"the state grew: deltas bigger than the base, not than a fresh one", ChainState{Base: true, Deltas: 1, BaseSize: 100, DeltaSize: 150, Current: 400}, false},
		{"the state grew: deltas bigger than a fresh base", ChainState{Base: true, Deltas: 2, BaseSize: 100, DeltaSize: 401, Current: 400}, true},
		{"the state shrank: a fresh base is cheaper", ChainState{Base: true, Deltas: 1, BaseSize: 100, DeltaSize: 60, Current: 50}, true},
	}
	for _, c := range cases {
		if got := cfg.WantFull(c.st); got != c.want {
			t.Errorf("%s: WantFull = %v", c.name, got)
		}
	}
	if (Config{FullEvery: 100}).WantFull(ChainState{Base: true, Deltas: 5, BaseSize: 1, DeltaSize: 1000}) {
		t.Error("ratio rule applied with MaxChainRatio 0")
	}
	if !(Config{FullEvery: 1}).WantFull(ChainState{Base: true}) {
		t.Error("FullEvery 1: a delta")
	}
}

func TestPlanner(t *testing.T) {
	p := NewPlanner(Config{FullEvery: 3, MaxChainRatio: 2}, 1)
	var got []string
	step := func(ok bool, size int64) {
		pl := p.Next()
		got = append(got, fmt.Sprintf("%d:%v:%d:%d", pl.ID, pl.Full, pl.Base, pl.Parent))
		if ok {
			p.Persisted(size)
		} else {
			p.Failed()
		}
	}
	step(true, 100) // 1 full
	step(true, 10)  // 2 delta
	step(true, 10)  // 3 delta
	step(true, 100) // 4 full (every 3rd)
	step(false, 0)  // 5 delta, lost
	step(true, 100) // 6 full: the chain broke
	step(true, 150) // 7 delta
	step(true, 60)  // 8 delta: 210 > 2*100
	step(true, 100) // 9 full
	want := []string{"1:true:1:0", "2:false:1:1", "3:false:1:2", "4:true:4:0", "5:false:4:4", "6:true:6:0", "7:false:6:6", "8:false:6:7", "9:true:9:0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("plans %v\nwant  %v", got, want)
	}
	r := Resume(Config{FullEvery: 10, MaxChainRatio: 1}, ChainState{Base: true, Deltas: 1, BaseSize: 100, DeltaSize: 10}, 20, 21)
	if pl := r.Next(); pl != (Plan{ID: 22, Base: 20, Parent: 21}) {
		t.Fatalf("resumed plan %+v", pl)
	}
}
