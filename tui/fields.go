package tui

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Event fields arrive in two shapes: decoded from JSON (float64, []any,
// map[string]any) or straight from the in-process bus (int, uint64,
// []job.InstanceID, slices of structs). These accessors read both, and never
// panic on a field of the wrong type: a wrong field reads as absent.

// num reads a numeric field; ok is false when it is absent or not a number.
func num(f map[string]any, key string) (float64, bool) {
	v, ok := f[key]
	if !ok || v == nil {
		return 0, false
	}
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint:
		return float64(x), true
	case time.Duration:
		return float64(x.Milliseconds()), true
	case json.Number:
		n, err := x.Float64()
		return n, err == nil
	case string:
		n, err := strconv.ParseFloat(x, 64)
		return n, err == nil
	case bool:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// numOr reads a numeric field or returns def.
func numOr(f map[string]any, key string, def float64) float64 {
	if n, ok := num(f, key); ok {
		return n
	}
	return def
}

// str reads a field as text; absent reads as "".
func str(f map[string]any, key string) string {
	v, ok := f[key]
	if !ok || v == nil {
		return ""
	}
	return text(v)
}

// boolean reads a boolean field.
func boolean(f map[string]any, key string) bool {
	switch x := f[key].(type) {
	case bool:
		return x
	case string:
		b, _ := strconv.ParseBool(x)
		return b
	}
	return false
}

// list reads a list field as text items: ["n1","n2"], []job.InstanceID, ...
func list(f map[string]any, key string) []string {
	v, ok := f[key]
	if !ok || v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		if s := text(v); s != "" {
			return strings.Fields(strings.ReplaceAll(s, ",", " "))
		}
		return nil
	}
	out := make([]string, 0, rv.Len())
	for i := 0; i < rv.Len(); i++ {
		out = append(out, text(rv.Index(i).Interface()))
	}
	return out
}

// count reads a field that is either a number or a list (then its length).
func count(f map[string]any, key string) (int, bool) {
	if n, ok := num(f, key); ok {
		return int(n), true
	}
	v, ok := f[key]
	if !ok || v == nil {
		return 0, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		return rv.Len(), true
	}
	return 0, false
}

// text renders any field value compactly: numbers without a trailing .0,
// ranges {lo,hi} as [lo,hi), maps sorted by key.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case fmt.Stringer:
		return x.String()
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		if lo, ok := num(x, "lo"); ok && len(x) == 2 {
			if hi, ok := num(x, "hi"); ok {
				return fmt.Sprintf("[%d,%d)", int(lo), int(hi))
			}
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
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = text(rv.Index(i).Interface())
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.Struct:
		// Ranges from the bus: a struct with Lo and Hi.
		lo, hi := rv.FieldByName("Lo"), rv.FieldByName("Hi")
		if lo.IsValid() && hi.IsValid() && lo.CanInt() && hi.CanInt() {
			return fmt.Sprintf("[%d,%d)", lo.Int(), hi.Int())
		}
	}
	if n, ok := num(map[string]any{"v": v}, "v"); ok {
		return text(n)
	}
	return fmt.Sprint(v)
}

// ranges renders a list of key-group ranges: "[0,64) [96,128)".
func ranges(f map[string]any, key string) string {
	items := list(f, key)
	return strings.Join(items, " ")
}
