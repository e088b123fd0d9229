package events

import (
	"encoding/json"
	"strconv"
)

// Field readers for an event's Fields. Events made in process carry Go
// numbers of any width; events read back from JSON carry float64 (or
// json.Number). A missing field or one of another type reads as zero.

// Num is field k as a number.
func Num(f map[string]any, k string) float64 {
	switch v := f[k].(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case uint64:
		return float64(v)
	case uint32:
		return float64(v)
	case uint:
		return float64(v)
	case json.Number:
		x, _ := v.Float64()
		return x
	case string:
		x, _ := strconv.ParseFloat(v, 64)
		return x
	}
	return 0
}

// Str is field k as a string.
func Str(f map[string]any, k string) string {
	s, _ := f[k].(string)
	return s
}

// Bool is field k as a boolean.
func Bool(f map[string]any, k string) bool {
	b, _ := f[k].(bool)
	return b
}
