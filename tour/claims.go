package tour

import (
	"fmt"
	"strings"
	"time"

	"spate/internal/human"
	"spate/tui"
)

// claimKeys are the figures compareClaims sets: the comparison table's
// two columns (here_*, cmp_*) and its sentences (cmp_claims).
var claimKeys = []string{"interval", "loss_age", "restarted", "replayed", "restored", "lag_peak"}

// pendingClaims are the comparison's figures before they are in.
func pendingClaims() map[string]string {
	f := map[string]string{"cmp_claims": "(the sentences that compare the two come when the second cluster's figures are in)"}
	for _, k := range claimKeys {
		f["here_"+k], f["cmp_"+k] = "…", "…"
	}
	return f
}

// compareClaims writes the comparison's table cells and the sentences
// that compare the two clusters, from their figures: here the tour's
// cluster, there the second one (run with ft, under --interval of ak's
// interval when the tour's kill was aligned). Each sentence reads
// "Label: H here against T under --ft X: WORD, why.", the label and
// figures those of a row of the table, WORD the way the figures go
// (fewer, more, as many; shorter, longer; lower, higher), and the why
// the design's when they go the way the design says, or what else is at
// play when they do not. A sentence is never written ahead of its
// figures.
func compareClaims(here, there tui.RecoveryNumbers, ak *alignedKill, victim, ft string) map[string]string {
	under := "on the second cluster"
	if ft != "" {
		under = "under --ft " + ft
	}
	f := map[string]string{}
	dur := func(d time.Duration, ok bool) string {
		if !ok || d <= 0 {
			return "-"
		}
		return human.Duration(d)
	}
	if ak != nil {
		f["here_interval"] = human.Duration(ak.interval)
		f["cmp_interval"] = human.Duration(ak.interval.Round(100 * time.Millisecond))
	} else {
		f["here_interval"], f["cmp_interval"] = "-", "-"
	}
	f["here_loss_age"], f["cmp_loss_age"] = dur(here.LossAge, here.AgeKnown), dur(there.LossAge, there.AgeKnown)
	f["here_restarted"] = fmt.Sprintf("%d of %d", here.Restarted, here.Instances)
	f["cmp_restarted"] = fmt.Sprintf("%d of %d", there.Restarted, there.Instances)
	f["here_replayed"], f["cmp_replayed"] = human.Count(float64(here.Replayed)), human.Count(float64(there.Replayed))
	f["here_restored"], f["cmp_restored"] = dur(here.Restored, true), dur(there.Restored, true)
	f["here_lag_peak"], f["cmp_lag_peak"] = dur(here.LagPeak, here.Done), dur(there.LagPeak, there.Done)

	var out []string
	say := func(label, key, word, why string) {
		s := fmt.Sprintf("%s: %s here against %s %s: %s", label, f["here_"+key], f["cmp_"+key], under, word)
		if why != "" {
			s += ", " + why
		}
		out = append(out, s+".")
	}
	sample := "one run of each is one sample, and spate bench recovery compares the two over many rounds"

	// The setting: the same interval, the same age.
	if ak != nil {
		out = append(out, fmt.Sprintf("Both clusters checkpoint every %s (here the tuner's interval for %s at the kill, there --interval %s), and both kills came half an interval after a capture of %s's state (of a global checkpoint %s).",
			f["here_interval"], victim, f["cmp_interval"], victim, under))
	} else {
		out = append(out, fmt.Sprintf("The tour's kill could not be timed by %s's checkpoints, so the two kills came at ages of the state that need not match.", victim))
	}
	ageDiffers := false
	if here.AgeKnown && there.AgeKnown {
		a, b := here.LossAge, there.LossAge
		switch {
		case near(a, b, 0.25):
			say("State lost since the checkpoint", "loss_age", "about as long",
				"so both lose about as much input")
		default:
			ageDiffers = true
			word := "longer"
			if a < b {
				word = "shorter"
			}
			why := "since the loss is noticed a moment after the kill and that moment varies, so for this reason too the two lose different amounts of input"
			if ak == nil {
				why = "since the kills could not be aligned, so for this reason too the two lose different amounts of input"
			}
			say("State lost since the checkpoint", "loss_age", word, why)
		}
	}

	switch {
	case here.Restarted < there.Restarted:
		say("Instances restarted", "restarted", "fewer", "since only the instances the dead node hosted restart, and every other one keeps running")
	case here.Restarted == there.Restarted && here.Restarted == here.Instances:
		say("Instances restarted", "restarted", "as many", "since the dead node hosted every instance")
	case here.Restarted == there.Restarted:
		say("Instances restarted", "restarted", "as many", "")
	default:
		say("Instances restarted", "restarted", "more", "")
	}

	hr, tr := f["here_replayed"], f["cmp_replayed"]
	switch {
	case hr == tr:
		say("Records sent or read again", "replayed", "as many", "")
	case here.Replayed < there.Replayed:
		say("Records sent or read again", "replayed", "fewer",
			"since only what the lost instances had not yet checkpointed is sent to them again, from their upstreams' backups, while every source reads again all it read since the global checkpoint")
	default:
		why := fmt.Sprintf("because here each of the %s counts what its upstreams send it again, so a record is counted once at each stage of the chain the dead node hosted, while %s only what the sources read again is counted, though every instance then processes it again", human.Plural(here.Restarted, "lost instance"), under)
		if ageDiffers {
			why += "; and the kills came at different ages of the state"
		}
		say("Records sent or read again", "replayed", "more", why)
	}

	switch hs, ts := f["here_restored"], f["cmp_restored"]; {
	case hs == "-" || ts == "-":
	case hs == ts:
		say("Loss to restored", "restored", "as long", "")
	case here.Restored < there.Restored:
		say("Loss to restored", "restored", "shorter", "since only the lost instances load a checkpoint, and nothing waits for the rest of the job to roll back")
	default:
		say("Loss to restored", "restored", "longer",
			"though fewer instances restart: in both modes the restore begins with noticing the loss and starting the lost instances on a node again, and "+sample)
	}

	switch hl, tl := f["here_lag_peak"], f["cmp_lag_peak"]; {
	case hl == "-" || tl == "-":
	case hl == tl:
		say("Highest output lag", "lag_peak", "as high", "")
	case here.LagPeak < there.LagPeak:
		say("Highest output lag", "lag_peak", "lower", "since the instances that kept running go on producing results while the lost ones catch up")
	default:
		say("Highest output lag", "lag_peak", "higher",
			"though fewer instances restart: the results of the lost instances' keys wait in both modes until they have caught up, and "+sample)
	}
	f["cmp_claims"] = strings.Join(out, " ")
	return f
}

// near says whether a and b differ by at most frac of the larger.
func near(a, b time.Duration, frac float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return float64(d) <= frac*float64(max(a, b))
}
