package export

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// ValidateJSON checks data against the rules of the trace-event format
// that Perfetto and chrome://tracing rely on: a traceEvents list whose
// events each have a name, a known ph, numeric ts, pid and tid; complete
// events (X) a non-negative dur; instant events (i) a scope of t, p or g
// if any; counters (C) numeric args; metadata (M) a known name with its
// argument; the complete events of one thread nested or disjoint; and a
// thread_name for every thread that has an event. Perfetto validates the
// trace it writes with it, and the tests validate what it wrote.
func ValidateJSON(data []byte) error {
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("trace: %v", err)
	}
	if doc.TraceEvents == nil {
		return fmt.Errorf("trace: no traceEvents list")
	}
	type key struct{ pid, tid float64 }
	type iv struct {
		ts, end float64
		i       int
	}
	named := map[key]bool{}
	used := map[key]int{}
	spans := map[key][]iv{}
	for i, e := range doc.TraceEvents {
		at := func(format string, args ...any) error {
			return fmt.Errorf("trace: traceEvents[%d] (%v): %s", i, e["name"], fmt.Sprintf(format, args...))
		}
		name, _ := e["name"].(string)
		if name == "" {
			return at("no name")
		}
		ph, _ := e["ph"].(string)
		var nums [3]float64
		for j, f := range []string{"ts", "pid", "tid"} {
			v, ok := e[f].(float64)
			if !ok {
				if f == "ts" && ph == "M" {
					continue
				}
				return at("%s is not a number", f)
			}
			nums[j] = v
		}
		ts, k := nums[0], key{nums[1], nums[2]}
		if ph != "M" && (ts < 0 || math.IsNaN(ts)) {
			return at("ts %v is negative", ts)
		}
		args, _ := e["args"].(map[string]any)
		switch ph {
		case "X":
			d, ok := e["dur"].(float64)
			if !ok || d < 0 {
				return at("a complete event needs a dur >= 0, has %v", e["dur"])
			}
			spans[k] = append(spans[k], iv{ts, ts + d, i})
			used[k] = i
		case "i", "I":
			if s, ok := e["s"]; ok && s != "t" && s != "p" && s != "g" {
				return at("instant scope %v: want t, p or g", s)
			}
			used[k] = i
		case "C":
			if len(args) == 0 {
				return at("a counter needs args")
			}
			for a, v := range args {
				if _, ok := v.(float64); !ok {
					return at("counter value %s is not a number", a)
				}
			}
		case "M":
			switch name {
			case "process_name", "thread_name":
				if s, _ := args["name"].(string); s == "" {
					return at("%s needs args.name", name)
				}
				if name == "thread_name" {
					named[k] = true
				}
			case "process_sort_index", "thread_sort_index":
				if _, ok := args["sort_index"].(float64); !ok {
					return at("%s needs a numeric args.sort_index", name)
				}
			default:
				return at("unknown metadata %q", name)
			}
		default:
			return at("ph %q is not one this exporter writes (X, i, C, M)", ph)
		}
	}
	for k, i := range used {
		if !named[k] {
			return fmt.Errorf("trace: traceEvents[%d]: thread %v of process %v has no thread_name", i, k.tid, k.pid)
		}
	}
	for k, ivs := range spans {
		// Sorted by start, longest first: each span must end within the
		// innermost open one that contains its start.
		sort.Slice(ivs, func(a, b int) bool {
			if ivs[a].ts != ivs[b].ts {
				return ivs[a].ts < ivs[b].ts
			}
			return ivs[a].end > ivs[b].end
		})
		var stack []iv
		for _, s := range ivs {
			for len(stack) > 0 && stack[len(stack)-1].end <= s.ts {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && s.end > stack[len(stack)-1].end {
				o := stack[len(stack)-1]
				return fmt.Errorf("trace: traceEvents[%d] and [%d] overlap on thread %v of process %v without nesting", o.i, s.i, k.tid, k.pid)
			}
			stack = append(stack, s)
		}
	}
	return nil
}
