package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"spate/events"
)

// towards is the instance an event is about besides its own: the
// downstream of a trim, a replay or a link, the instance of an interval
// decision, the new owner of a moving slice; "" for other events.
func towards(e events.Event) string {
	switch f := e.Fields.(type) {
	case events.TrimFields:
		return f.To
	case events.ReplayFields:
		return f.To
	case events.LinkReconnectedFields:
		return f.To
	case events.FrameErrorFields:
		return f.To
	case events.ErrorFields:
		return f.To
	case events.IntervalFields:
		return f.Instance
	case events.RescaleStagedFields:
		return f.To
	case events.RescaleCapturedFields:
		return f.To
	case events.RescaleMovedFields:
		return f.To
	}
	return ""
}

// inputsText is an interval decision's model inputs, the load first,
// then the costs and the failure figures it weighs; zeros left out.
func inputsText(in events.IntervalInputs) string {
	var parts []string
	add := func(name string, v float64, unit string) {
		switch {
		case v == 0:
		case v >= 1000:
			parts = append(parts, name+"="+fmtRate(v)+unit)
		default:
			parts = append(parts, name+"="+strconv.FormatFloat(v, 'g', 4, 64)+unit)
		}
	}
	add("rate", in.Rate, "/s")
	add("capacity", in.Capacity, "/s")
	add("util", in.Util, "")
	if in.CheckpointCostMs != nil {
		add("cost", *in.CheckpointCostMs, "ms")
	}
	add("base", in.CostBaseMs, "ms")
	add("per_key", in.CostPerKeyUs, "µs")
	add("keys", in.StateKeys, "")
	if in.MTBFS != nil {
		add("mtbf", *in.MTBFS, "s")
	}
	add("detect", in.DetectMs, "ms")
	add("restart", in.RestartMs, "ms")
	add("load", in.LoadMs, "ms")
	add("persist", in.PersistMs, "ms")
	return strings.Join(parts, " ")
}

// text renders a field value as JSON gives it (strings, json.Number,
// booleans, lists, objects) compactly: numbers as written, ranges {hi,
// lo} as [lo,hi), objects as {k=v ...} sorted by key, lists as [a b].
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	case []any:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = text(it)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case map[string]any:
		lo, okLo := x["lo"].(json.Number)
		hi, okHi := x["hi"].(json.Number)
		if okLo && okHi && len(x) == 2 {
			return "[" + lo.String() + "," + hi.String() + ")"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + text(x[k])
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprint(v)
}
