package export

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"spate/chaos"
	"spate/events"
)

// fixedColumns open every CSV file; the event's fields follow, sorted by
// name: every field of the kind's payload type, whether an event of the
// run has it or not (so a kind's columns are the same in every run), and
// nested objects as dotted names. t_ms is milliseconds since the job
// started (negative before).
var fixedColumns = []string{"seq", "time", "t_ms", "node", "instance", "text"}

// CSV writes one file per event kind of the run in dir into out
// (KIND.csv), and returns their paths in kind order.
func CSV(dir, out string) ([]string, error) {
	evs, origin, err := load(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	byKind := map[events.Kind][]map[string]string{}
	cols := map[events.Kind]map[string]bool{}
	for _, e := range evs {
		row := map[string]string{}
		flatten("", events.FieldMap(e.Fields), row)
		if cols[e.Kind] == nil {
			cols[e.Kind] = map[string]bool{}
			for _, name := range events.FieldNames(e.Kind) {
				cols[e.Kind][name] = true
			}
		}
		for k := range row {
			cols[e.Kind][k] = true
		}
		row["\x00seq"] = strconv.FormatUint(e.Seq, 10)
		row["\x00time"] = e.Time.UTC().Format(time.RFC3339Nano)
		row["\x00t_ms"] = strconv.FormatFloat(math.Round(float64(e.Time.Sub(origin).Microseconds()))/1000, 'f', -1, 64)
		row["\x00node"], row["\x00instance"], row["\x00text"] = e.Node, e.Instance, e.Text
		byKind[e.Kind] = append(byKind[e.Kind], row)
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	var paths []string
	for _, k := range kinds {
		fields := make([]string, 0, len(cols[events.Kind(k)]))
		for c := range cols[events.Kind(k)] {
			if !nested(c, cols[events.Kind(k)]) {
				fields = append(fields, c)
			}
		}
		sort.Strings(fields)
		header := append(append([]string(nil), fixedColumns...), fields...)
		// A field named like a fixed column keeps its name in the header
		// with a field. prefix, so that no two columns share a name.
		for i := len(fixedColumns); i < len(header); i++ {
			for _, fc := range fixedColumns {
				if header[i] == fc {
					header[i] = "field." + fc
				}
			}
		}
		path := filepath.Join(out, fileName(k)+".csv")
		if err := writeCSV(path, header, fields, byKind[events.Kind(k)]); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func writeCSV(path string, header, fields []string, rows []map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	rec := make([]string, len(header))
	for _, row := range rows {
		for i, c := range fixedColumns {
			rec[i] = row["\x00"+c]
		}
		for i, c := range fields {
			rec[len(fixedColumns)+i] = row[c]
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// fileName is a kind as a safe file name.
func fileName(kind string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, kind)
}

// nested says whether column c is an object that has dotted columns of
// its own (inputs, when there are inputs.rate, ...).
func nested(c string, cols map[string]bool) bool {
	for o := range cols {
		if strings.HasPrefix(o, c+".") {
			return true
		}
	}
	return false
}

// flatten writes the fields of m into row: nested objects with dotted
// names, lists and other values as JSON, strings as they are, numbers as
// JSON has them.
func flatten(prefix string, m map[string]any, row map[string]string) {
	for k, v := range m {
		name := prefix + k
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				row[name] = "{}"
				continue
			}
			flatten(name+".", x, row)
		case string:
			row[name] = x
		case nil:
			row[name] = ""
		case bool:
			row[name] = strconv.FormatBool(x)
		case json.Number:
			row[name] = x.String()
		default:
			b, err := json.Marshal(x)
			if err != nil {
				b = []byte(fmt.Sprint(x))
			}
			row[name] = string(b)
		}
	}
}

// load reads the events of the run in dir and the moment its job
// started.
func load(dir string) ([]events.Event, time.Time, error) {
	r, err := chaos.BuildReport(dir, nil, chaos.Verify{})
	if err != nil {
		return nil, time.Time{}, err
	}
	evs, _, err := chaos.ReadEvents(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, time.Time{}, err
	}
	return evs, r.JobStarted, nil
}
