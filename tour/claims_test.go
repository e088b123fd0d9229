package tour

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"spate/tui"
)

// TestClaimsGoTheWayTheFiguresGo: compareClaims' sentences say what the
// figures say, the way the design expects or the other way with a why.
func TestClaimsGoTheWayTheFiguresGo(t *testing.T) {
	spate := tui.RecoveryNumbers{Restarted: 2, Instances: 8, Replayed: 5000, LossAge: 2 * time.Second, AgeKnown: true,
		Restored: 10 * time.Millisecond, LagPeak: 100 * time.Millisecond, Done: true}
	global := tui.RecoveryNumbers{Global: true, Restarted: 8, Instances: 8, Replayed: 20000, LossAge: 2100 * time.Millisecond, AgeKnown: true,
		Restored: 20 * time.Millisecond, LagPeak: 300 * time.Millisecond, Done: true}
	ak := &alignedKill{interval: 4 * time.Second, age: 2 * time.Second}
	for _, tc := range []struct {
		name        string
		here, there func(*tui.RecoveryNumbers)
		ak          *alignedKill
		want, not   []string
	}{
		{name: "as the design says",
			want: []string{"Both clusters checkpoint every 4.0 s", "Instances restarted: 2 of 8 here against 8 of 8 under --ft global: fewer",
				"Records sent or read again: 5k here against 20k under --ft global: fewer", "Loss to restored: 10 ms here against 20 ms under --ft global: shorter",
				"Highest output lag: 100 ms here against 300 ms under --ft global: lower", "State lost since the checkpoint: 2.0 s here against 2.1 s under --ft global: about as long"}},
		{name: "more records sent again than read again",
			here: func(n *tui.RecoveryNumbers) { n.Replayed = 50000 },
			want: []string{"Records sent or read again: 50k here against 20k under --ft global: more, because here each of the 2 lost instances"},
			not:  []string{"different ages"}},
		{name: "the kills at different ages",
			here: func(n *tui.RecoveryNumbers) { n.Replayed, n.LossAge = 50000, 4*time.Second },
			want: []string{"2.1 s under --ft global: longer, since the loss is noticed", "; and the kills came at different ages of the state"}},
		{name: "slower and with a higher lag",
			here: func(n *tui.RecoveryNumbers) { n.Restored, n.LagPeak = time.Second, time.Second },
			want: []string{"Loss to restored: 1.0 s here against 20 ms under --ft global: longer, though", "Highest output lag: 1.0 s here against 300 ms under --ft global: higher, though", "one run of each is one sample"}},
		{name: "not aligned", ak: nil,
			want: []string{"could not be timed by count#0's checkpoints"}, not: []string{"Both clusters"}},
		{name: "the recovery not over",
			here: func(n *tui.RecoveryNumbers) { n.Done = false },
			not:  []string{"Highest output lag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, g := spate, global
			if tc.here != nil {
				tc.here(&h)
			}
			if tc.there != nil {
				tc.there(&g)
			}
			a := ak
			if tc.name == "not aligned" {
				a = tc.ak
			}
			got := compareClaims(h, g, a, "count#0", "global")["cmp_claims"]
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("%q in\n%s", w, got)
				}
			}
		})
	}
}

// TestTheLessonsTableIsTheClaimsTable: every here_ figure of the
// lesson's comparison step, and cmp_claims, is one compareClaims sets.
func TestTheLessonsTableIsTheClaimsTable(t *testing.T) {
	l, err := Lesson()
	if err != nil {
		t.Fatal(err)
	}
	set := compareClaims(tui.RecoveryNumbers{}, tui.RecoveryNumbers{}, nil, "count#0", "global")
	named := 0
	for _, st := range l.Steps {
		for _, p := range st.Text {
			for _, m := range regexp.MustCompile(`\{(here_[a-z_]+|cmp_claims)\}`).FindAllStringSubmatch(p, -1) {
				named++
				if _, ok := set[m[1]]; !ok {
					t.Errorf("the lesson names {%s}, which compareClaims does not set", m[1])
				}
			}
		}
	}
	if named == 0 {
		t.Error("the lesson's comparison names none of the tour's figures")
	}
}
