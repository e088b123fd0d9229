package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"spate/events"
	"spate/state"
	"spate/stores"
)

// `bench recovery --store LIST`: every store of the list is a
// configuration axis beside the ft modes (spate/dir, spate/coord,
// global/dir, ...), interleaved round by round as they are. Per run it
// reads, beside the recovery's figures, the restore time, the persist
// time of the checkpoints before the kill, the checkpoints completed per
// second, and the bytes the stores moved over the network.

// benchStore is one store of --store.
type benchStore struct {
	label string      // "dir", "coord", "s3"; "" for the default store (no --store)
	spec  string      // the --store value of the runs (cfg.Store)
	sp    stores.Spec // parsed
}

// parseStores reads --store: a comma-separated list of dir, coord and
// s3://BUCKET[/PREFIX]?endpoint=HOST:PORT, each kind at most once. ""
// is the default store alone (as without the flag).
func parseStores(list string) ([]benchStore, error) {
	if strings.TrimSpace(list) == "" {
		return []benchStore{{}}, nil
	}
	bad := func(format string, args ...any) ([]benchStore, error) {
		return nil, fmt.Errorf("--store %q: %s", list, fmt.Sprintf(format, args...))
	}
	var out []benchStore
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return bad("an empty element: want a comma-separated list of %s", stores.Usage)
		}
		sp, err := stores.Parse(f)
		if err != nil {
			return bad("%q: want %s", f, stores.Usage)
		}
		if sp.Kind == stores.Auto {
			return bad("%q: name the store: %s", f, stores.Usage)
		}
		label := string(sp.Kind)
		if slices.ContainsFunc(out, func(b benchStore) bool { return b.label == label }) {
			return bad("%s is given twice", label)
		}
		out = append(out, benchStore{label: label, spec: sp.String(), sp: sp})
	}
	return out, nil
}

// probeStores checks that every object store of the list answers and
// takes our credentials, before any run: one line naming --store if not.
func probeStores(list []benchStore) error {
	for _, b := range list {
		if b.sp.Kind != stores.S3 {
			continue
		}
		if _, err := stores.OpenS3(b.sp, "spate-bench-probe", stores.S3Options{Timeout: 10 * time.Second}); err != nil {
			return err
		}
	}
	return nil
}

// recConf is one configuration of a recovery benchmark: an ft mode
// (spate, global, parallel) with a store.
type recConf struct {
	ft    string
	store benchStore
}

// key names the configuration in the output and the JSON maps: the ft
// mode alone with the default store (as before --store), else
// "ft/store".
func (c recConf) key() string { return confKey(c.ft, c.store.label) }

func confKey(ft, store string) string {
	if store == "" {
		return ft
	}
	return ft + "/" + store
}

// splitKey is the inverse of confKey.
func splitKey(key string) (ft, store string) {
	ft, store, _ = strings.Cut(key, "/")
	return ft, store
}

// recConfs is every ft mode with every store, ft first.
func recConfs(fts []string, list []benchStore) []recConf {
	var out []recConf
	for _, ft := range fts {
		for _, b := range list {
			out = append(out, recConf{ft: ft, store: b})
		}
	}
	return out
}

// refStore is the store the others are compared with: dir if it is in
// the list, else the first one ("" without --store).
func refStore(keys []string) string {
	ref := ""
	for i, k := range keys {
		_, st := splitKey(k)
		if st == "dir" {
			return st
		}
		if i == 0 {
			ref = st
		}
	}
	return ref
}

// Quantiles are the median and the 90th percentile of a run's values;
// -1 where it had none.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	N   int     `json:"n"` // values they are of
}

func quantilesOf(xs []float64) Quantiles {
	if len(xs) == 0 {
		return Quantiles{P50: -1, P90: -1}
	}
	return Quantiles{P50: median(xs), P90: percentile(xs, 0.9), N: len(xs)}
}

func (q Quantiles) String() string {
	if q.N == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s p90 %s (%d)", msText(q.P50), msText(q.P90), q.N)
}

func msText(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.0fms", ms)
}

// ckptWarm is where the steady stretch that the checkpoint figures are
// of begins, after the job started; it ends at the kill.
const ckptWarm = 2 * time.Second

// StoreRun is what one run of a recovery benchmark says of its store.
type StoreRun struct {
	// RestoreMs is from the loss detected to the last restore of its
	// recovery (a new instance placed, its node spawned if need be, its
	// checkpoint read from the store and loaded); -1 if unknown.
	RestoreMs float64 `json:"restore_ms"`
	// PersistMs: the instances' checkpoints completed in the steady
	// stretch (from ckptWarm after the job started to the kill), their
	// persist time (events' persist_us). --ft global's checkpoint events
	// do not carry it: TookMs is its global checkpoints' time from
	// trigger to complete instead.
	PersistMs Quantiles `json:"persist_ms"`
	TookMs    Quantiles `json:"global_took_ms"`
	// CheckpointsPerS: the instances' checkpoints (global: the global
	// checkpoints) completed per second of the steady stretch.
	CheckpointsPerS float64 `json:"checkpoints_per_s"`
	// Traffic is the bytes the stores moved over the network in the run:
	// the coordinator store's count in run.json for coord; the sum over
	// the node processes of their last store_traffic event for s3 (a
	// killed node's last half second is missing); none for dir.
	Traffic     stores.Traffic `json:"traffic"`
	TrafficFrom string         `json:"traffic_from,omitempty"` // "run.json", "node events", "" (none)
}

// storeRun reads a run's store figures from its events and run.json,
// and the persist (instances) and took (global) times of its steady
// stretch in ms, for pooling over runs.
func storeRun(r *run, store string) (sr StoreRun, persist, took []float64) {
	sr = StoreRun{RestoreMs: -1}
	ph := phases(r)
	if ph.Detected >= 0 && ph.Restored >= ph.Detected {
		sr.RestoreMs = ph.Restored - ph.Detected
	}
	if r.info == nil || r.info.JobStart == nil {
		return sr, nil, nil
	}
	from := r.info.JobStart.Add(ckptWarm)
	to := r.info.JobStart.Add(time.Duration(r.killAtMs) * time.Millisecond)
	if r.killAtMs <= 0 && r.info.Finished != nil {
		to = *r.info.Finished
	}
	type proc struct {
		node  string
		epoch int
	}
	epoch := map[string]int{}         // node -> processes seen joining under its name
	last := map[proc]stores.Traffic{} // the highest count of each node process
	r.mu.Lock()
	for _, e := range r.evs {
		switch e.Kind {
		case events.NodeJoined:
			epoch[e.Node]++
		case events.Checkpoint:
			if e.Time.Before(from) || !e.Time.Before(to) {
				continue
			}
			f, _ := e.Fields.(events.CheckpointFields)
			if f.Global {
				took = append(took, float64(f.TookMs))
			} else {
				persist = append(persist, float64(f.PersistUs)/1000)
			}
		case events.StoreTraffic:
			f, _ := e.Fields.(events.StoreTrafficFields)
			p := proc{e.Node, epoch[e.Node]}
			t := last[p]
			last[p] = stores.Traffic{FromStore: max(t.FromStore, f.FromStore), ToStore: max(t.ToStore, f.ToStore)}
		}
	}
	r.mu.Unlock()
	sr.PersistMs, sr.TookMs = quantilesOf(persist), quantilesOf(took)
	if s := to.Sub(from).Seconds(); s > 0 {
		n := len(persist)
		if len(took) > 0 {
			n = len(took)
		}
		sr.CheckpointsPerS = float64(n) / s
	}
	switch {
	case store == "coord" && r.info.StoreTraffic != nil:
		sr.Traffic, sr.TrafficFrom = *r.info.StoreTraffic, "run.json"
	case store != "dir" && store != "" && len(last) > 0:
		for _, t := range last {
			sr.Traffic = sr.Traffic.Add(t)
		}
		sr.TrafficFrom = "node events"
	}
	return sr, persist, took
}

// StoreFigures are a configuration's store figures over its runs:
// medians of the runs' values, and the persist and took times pooled
// over every run's checkpoints.
type StoreFigures struct {
	RestoreMs       float64   `json:"restore_ms"` // -1: none known
	PersistMs       Quantiles `json:"persist_ms"`
	TookMs          Quantiles `json:"global_took_ms"`
	CheckpointsPerS float64   `json:"checkpoints_per_s"`
	FromStore       float64   `json:"from_store_bytes"` // per run
	ToStore         float64   `json:"to_store_bytes"`   // per run
	// Pooled: the runs' checkpoint times, for the quantiles over them.
	persist, took []float64
}

// StoreRatio is a configuration's figures over those of the same ft mode
// with the reference store (Against): recovery time, restore time, the
// persist (global: took) quantiles and the checkpoint rate.
type StoreRatio struct {
	Against         string  `json:"against"`
	RecoveryS       float64 `json:"recovery_s"`
	RestoreMs       float64 `json:"restore_ms"`
	CheckpointP50   float64 `json:"checkpoint_p50"`
	CheckpointP90   float64 `json:"checkpoint_p90"`
	CheckpointsPerS float64 `json:"checkpoints_per_s"`
}

// storeFigures pools the store figures of a configuration's runs: the
// persist and took times of every run's steady stretch, read from their
// events again (the runs keep only the quantiles).
func storeFigures(runs []RecoveryRun) StoreFigures {
	var rest, rate, from, to []float64
	var persist, took []float64
	for _, rr := range runs {
		if rr.Figures.RestoreMs >= 0 {
			rest = append(rest, rr.Figures.RestoreMs)
		}
		rate, from, to = append(rate, rr.Figures.CheckpointsPerS), append(from, float64(rr.Figures.Traffic.FromStore)), append(to, float64(rr.Figures.Traffic.ToStore))
		persist, took = append(persist, rr.persist...), append(took, rr.took...)
	}
	sf := StoreFigures{RestoreMs: -1, CheckpointsPerS: median(rate), FromStore: median(from), ToStore: median(to)}
	if len(rest) > 0 {
		sf.RestoreMs = median(rest)
	}
	sf.PersistMs, sf.TookMs = quantilesOf(persist), quantilesOf(took)
	return sf
}

// checkpointQ is the quantiles a configuration's checkpoint cost is
// read from: persist times, or global took times under --ft global.
func (sf StoreFigures) checkpointQ() Quantiles {
	if sf.PersistMs.N == 0 && sf.TookMs.N > 0 {
		return sf.TookMs
	}
	return sf.PersistMs
}

// storeRatios compares each configuration's store figures with those of
// the same ft mode at the reference store.
func storeRatios(shr *RecoveryShape, keys []string) map[string]StoreRatio {
	ref := refStore(keys)
	out := map[string]StoreRatio{}
	div := func(a, b float64) float64 {
		if a < 0 || b <= 0 {
			return math.NaN()
		}
		return a / b
	}
	for _, k := range keys {
		ft, st := splitKey(k)
		if st == ref {
			continue
		}
		rk := confKey(ft, ref)
		a, b := shr.Stores[k], shr.Stores[rk]
		qa, qb := a.checkpointQ(), b.checkpointQ()
		out[k] = StoreRatio{Against: rk, RecoveryS: div(shr.RecoveryS[k], shr.RecoveryS[rk]), RestoreMs: div(a.RestoreMs, b.RestoreMs),
			CheckpointP50: div(qa.P50, qb.P50), CheckpointP90: div(qa.P90, qb.P90), CheckpointsPerS: div(a.CheckpointsPerS, b.CheckpointsPerS)}
	}
	return out
}

// bytesText is n bytes in B, kB, MB (decimal, as network figures go).
func bytesText(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", n/1e3)
	}
	return fmt.Sprintf("%.0f B", n)
}

func (sr StoreRun) String() string {
	ck := "persist " + sr.PersistMs.String()
	if sr.PersistMs.N == 0 && sr.TookMs.N > 0 {
		ck = "global checkpoints took " + sr.TookMs.String()
	}
	return fmt.Sprintf("restore %s; %s, %.2f checkpoints/s before the kill; network %s", restoreText(sr.RestoreMs), ck, sr.CheckpointsPerS, trafficText(float64(sr.Traffic.ToStore), float64(sr.Traffic.FromStore), sr.TrafficFrom))
}

func (sf StoreFigures) String() string {
	ck := "persist " + sf.PersistMs.String()
	if sf.PersistMs.N == 0 && sf.TookMs.N > 0 {
		ck = "global checkpoints took " + sf.TookMs.String()
	}
	return fmt.Sprintf("restore %s; %s, %.2f checkpoints/s before the kill; network per run %s", restoreText(sf.RestoreMs), ck, sf.CheckpointsPerS, trafficText(sf.ToStore, sf.FromStore, "x"))
}

func restoreText(ms float64) string {
	if ms < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fms", ms)
}

func trafficText(to, from float64, src string) string {
	if src == "" && to == 0 && from == 0 {
		return "none"
	}
	return fmt.Sprintf("%s to the store, %s from it", bytesText(to), bytesText(from))
}

// MarshalJSON writes what is not finite (no value on one side) as null.
func (r StoreRatio) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Against         string   `json:"against"`
		RecoveryS       *float64 `json:"recovery_s"`
		RestoreMs       *float64 `json:"restore_ms"`
		CheckpointP50   *float64 `json:"checkpoint_p50"`
		CheckpointP90   *float64 `json:"checkpoint_p90"`
		CheckpointsPerS *float64 `json:"checkpoints_per_s"`
	}{r.Against, finite(r.RecoveryS), finite(r.RestoreMs), finite(r.CheckpointP50), finite(r.CheckpointP90), finite(r.CheckpointsPerS)})
}

func (r StoreRatio) String() string {
	f := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "-"
		}
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("recovery %s, restore %s, checkpoint p50 %s p90 %s, checkpoints/s %s", f(r.RecoveryS), f(r.RestoreMs), f(r.CheckpointP50), f(r.CheckpointP90), f(r.CheckpointsPerS))
}

// cleanS3 deletes what a verified run left in its object store (its
// checkpoints and output under RUN/), as discard removes its run
// directory; it says on w what it could not delete.
func cleanS3(b benchStore, run string, w io.Writer) {
	if b.sp.Kind != stores.S3 || run == "" {
		return
	}
	for _, sub := range []string{"checkpoints", "output"} {
		s, err := stores.OpenS3(b.sp, run+"/"+sub, stores.S3Options{})
		if err == nil {
			var names []string
			if names, err = s.List(""); err == nil {
				for _, n := range names {
					if derr := s.Delete(n); derr != nil && err == nil && !isNotFound(derr) {
						err = derr
					}
				}
			}
		}
		if err != nil {
			fmt.Fprintf(w, "spate bench: run %s's objects not all deleted: %v\n", run, err)
			return
		}
	}
}

func isNotFound(err error) bool { return errors.Is(err, state.ErrNotFound) }
