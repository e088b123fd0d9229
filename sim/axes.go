package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// axesSeq is the second word of the PCG state the configuration axes are
// drawn from: a stream of the seed apart from the fault schedule's
// (nemesisSeq), so that adding an axis never moves a seed's faults.
const axesSeq = 0xa7e5_0f5e_ed0a_7e50

// axis is one configuration axis of the product the nemesis draws per
// seed: its values, each with its weight.
type axis struct {
	name    string
	values  []string
	weights []float64
}

// axes are drawn in this order, one draw each whether pinned or not, so
// that pinning one axis (--only) leaves the others as the seed drew them,
// and an axis added at the end leaves the earlier ones as they were.
//
// tls is not an axis: over the in-memory transport a node's peer links
// carry the link fault layer under TLS (node.dialPeer wraps the raw
// connection, then the TLS client), so the layer sees ciphertext and
// cannot hold traffic between two yamux frames (netfault.Framed is a
// no-op on a *tls.Conn); a fault would hold a reader inside a TLS
// record, on a mutex, which stops the virtual clock (doc.go).
var axes = []axis{
	{"ft", []string{"spate", "global", "none"}, []float64{0.5, 0.25, 0.25}},
	{"rescale", []string{"live", "restart"}, []float64{0.6, 0.4}},
	{"recover", []string{"single", "parallel"}, []float64{0.6, 0.4}},
	{"store", []string{"mem", "dir", "coord"}, []float64{0.4, 0.3, 0.3}},
	{"autoscale", []string{"off", "on"}, []float64{0.7, 0.3}},
	{"source", []string{"gen", "trace"}, []float64{0.7, 0.3}},
}

// AxisNames is every axis, in drawing order.
func AxisNames() []string {
	var out []string
	for _, a := range axes {
		out = append(out, a.name)
	}
	return out
}

// ParseOnly reads --only: axis=value pairs separated by commas
// ("ft=global,rescale=restart"). A bad axis or value is a one-line error
// naming it.
func ParseOnly(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("--only: %q is not axis=value", kv)
		}
		i := slices.IndexFunc(axes, func(a axis) bool { return a.name == k })
		if i < 0 {
			return nil, fmt.Errorf("--only: %q is not an axis (%s)", k, strings.Join(AxisNames(), ", "))
		}
		if !slices.Contains(axes[i].values, v) {
			return nil, fmt.Errorf("--only: %s=%q is not one of %s", k, v, strings.Join(axes[i].values, ", "))
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("--only: %s given twice (%s and %s)", k, old, v)
		}
		out[k] = v
	}
	return out, nil
}

// Axes is the configuration a seed ran with, one value per axis.
type Axes map[string]string

// String is "ft=spate rescale=live ..." in drawing order.
func (a Axes) String() string {
	var parts []string
	for _, ax := range axes {
		if v, ok := a[ax.name]; ok {
			parts = append(parts, ax.name+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// drawAxes draws seed's configuration: pure, and each pinned axis as
// pinned.
func drawAxes(seed uint64, pinned map[string]string) Axes {
	rng := rand.New(rand.NewPCG(seed, axesSeq))
	out := Axes{}
	for _, a := range axes {
		r, v := rng.Float64(), a.values[len(a.values)-1]
		for i, w := range a.weights {
			if r < w {
				v = a.values[i]
				break
			}
			r -= w
		}
		if p, ok := pinned[a.name]; ok {
			v = p
		}
		out[a.name] = v
	}
	return out
}

// Resolve is cfg as seed runs it: with Wide, each axis drawn from the
// seed (or pinned by cfg.Only) and set in cfg's fields; without, cfg as
// it is. Resolve is pure and idempotent.
func Resolve(seed uint64, cfg Config) Config {
	if !cfg.Wide {
		return cfg
	}
	a := drawAxes(seed, cfg.Only)
	cfg.FT, cfg.Rescale, cfg.Recover = a["ft"], a["rescale"], a["recover"]
	cfg.Store, cfg.Autoscale, cfg.Source = a["store"], a["autoscale"] == "on", a["source"]
	return cfg
}

// axesOf is the axes of a resolved cfg, for the verdict.
func axesOf(cfg Config) Axes {
	if !cfg.Wide {
		return nil
	}
	or := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	onOff := map[bool]string{true: "on", false: "off"}
	return Axes{"ft": or(cfg.FT, "spate"), "rescale": or(cfg.Rescale, "live"), "recover": or(cfg.Recover, "single"),
		"store": or(cfg.Store, "mem"), "autoscale": onOff[cfg.Autoscale], "source": or(cfg.Source, "gen")}
}

// AxisCount is how many seeds ran with one value of an axis, and how many
// of them failed.
type AxisCount struct {
	Seeds  int `json:"seeds"`
	Failed int `json:"failed"`
}

// countAxes is, per axis and value, the seeds of results and their
// failures (every value of every axis listed, zero or not).
func countAxes(results []Result) map[string]map[string]*AxisCount {
	out := map[string]map[string]*AxisCount{}
	for _, a := range axes {
		out[a.name] = map[string]*AxisCount{}
		for _, v := range a.values {
			out[a.name][v] = &AxisCount{}
		}
	}
	for _, r := range results {
		for k, v := range r.Axes {
			c := out[k][v]
			if c == nil {
				continue
			}
			c.Seeds++
			if r.Failed() {
				c.Failed++
			}
		}
	}
	return out
}

// axisLines is countAxes as lines of text: "  ft: spate 5 (0 failed), ...".
func axisLines(counts map[string]map[string]*AxisCount) []string {
	var out []string
	for _, a := range axes {
		var parts []string
		for _, v := range a.values {
			c := counts[a.name][v]
			parts = append(parts, fmt.Sprintf("%s %d (%d failed)", v, c.Seeds, c.Failed))
		}
		out = append(out, fmt.Sprintf("  %s: %s", a.name, strings.Join(parts, ", ")))
	}
	return out
}
