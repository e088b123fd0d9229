package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The kinds with more than one shape: each writes the fields of the shape
// its value is in and leaves the others out, as the sites that made them
// as maps did. Decoding needs no help except where one JSON name holds
// values of two types (moves, and a restart's from and to).

// only encodes v (a struct without methods) and keeps the listed keys of
// its object, in their order.
func only(v any, keys ...string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	return keepKeys(b, func(k string) bool { return set[k] })
}

// keepKeys is the JSON object b with only the keys keep says yes to.
func keepKeys(b []byte, keep func(string) bool) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil { // {
		return nil, err
	}
	out := []byte{'{'}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		var val json.RawMessage
		if err := d.Decode(&val); err != nil {
			return nil, err
		}
		k, _ := t.(string)
		if !keep(k) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		name, _ := json.Marshal(k)
		out = append(append(append(out, name...), ':'), val...)
	}
	return append(out, '}'), nil
}

// MarshalJSON: a global checkpoint is {global, id, took_ms}.
func (f CheckpointFields) MarshalJSON() ([]byte, error) {
	type plain CheckpointFields
	if f.Global {
		return only(plain(f), "global", "id", "took_ms")
	}
	return json.Marshal(plain(f)) // global and took_ms are left out as zero
}

// MarshalJSON: an instance's is {chain, from, gen}, a global rollback's
// (no From) {checkpoint, records}.
func (f RecoveryPlacedFields) MarshalJSON() ([]byte, error) {
	type plain RecoveryPlacedFields
	if f.From == "" {
		return only(plain(f), "checkpoint", "records")
	}
	return only(plain(f), "chain", "from", "gen")
}

// MarshalJSON: a global rollback's (no Gen) is {checkpoint}.
func (f RecoveryRestoredFields) MarshalJSON() ([]byte, error) {
	type plain RecoveryRestoredFields
	if f.Gen == 0 {
		return only(plain(f), "checkpoint")
	}
	return json.Marshal(plain(f))
}

// MarshalJSON: an instance's (Backpressure set) has no cpu or rss, a
// node's no backpressure.
func (f MetricsFields) MarshalJSON() ([]byte, error) {
	type plain MetricsFields
	if f.Backpressure != "" {
		return only(plain(f), "backlog", "backpressure", "in_rate", "out_rate")
	}
	return only(plain(f), "backlog", "cpu", "in_rate", "out_rate", "rss")
}

// MarshalJSON: a node's (no Checkpoint) is {error} or {error, ranges}.
func (f CheckpointFallbackFields) MarshalJSON() ([]byte, error) {
	type plain CheckpointFallbackFields
	if f.Checkpoint == 0 {
		return only(plain(f), "error", "ranges")
	}
	return only(plain(f), "checkpoint", "error", "fallback")
}

// MarshalJSON: a damaged file's (File set) is {file, forgotten}, a
// restore's {checkpoint, forgotten}.
func (f CheckpointsForgottenFields) MarshalJSON() ([]byte, error) {
	type plain CheckpointsForgottenFields
	if f.File != "" {
		return only(plain(f), "file", "forgotten")
	}
	return only(plain(f), "checkpoint", "forgotten")
}

// MarshalJSON: the tuner's decision (Why set) has every field but pinned;
// the barrier period of --ft global (Instance "global") {inputs,
// instance, interval_ms, reason}; a setting by hand those and pinned and
// previous_ms.
func (f IntervalFields) MarshalJSON() ([]byte, error) {
	type plain IntervalFields
	switch {
	case f.Why != "":
		return only(plain(f), "changed", "exposure_s", "failures", "inputs", "instance", "interval_ms", "optimum_ms",
			"own_exposure_s", "own_failures", "predicted_efficiency", "previous_ms", "prior_weight", "reason", "why")
	case f.Instance == "global":
		return only(plain(f), "inputs", "instance", "interval_ms", "reason")
	}
	return only(plain(f), "inputs", "instance", "interval_ms", "pinned", "previous_ms", "reason")
}

// MarshalJSON: no inputs (a setting by hand) is {}.
func (in IntervalInputs) MarshalJSON() ([]byte, error) {
	if in == (IntervalInputs{}) {
		return []byte("{}"), nil
	}
	type plain IntervalInputs
	return json.Marshal(plain(in))
}

// MarshalJSON: a restart rescale's moves are their number, and it has no
// loads or why.
func (f RescalePlannedFields) MarshalJSON() ([]byte, error) {
	if f.Mode == "restart" {
		return json.Marshal(struct {
			From      int       `json:"from"`
			ID        uint64    `json:"id"`
			KeyGroups int       `json:"key_groups"`
			Load      []float64 `json:"load"`
			Mode      string    `json:"mode"`
			Moves     int       `json:"moves"`
			Op        string    `json:"op"`
			To        int       `json:"to"`
		}{f.From, f.ID, f.KeyGroups, f.Load, f.Mode, f.MoveCount, f.Op, f.To})
	}
	type plain RescalePlannedFields
	return json.Marshal(plain(f))
}

// UnmarshalJSON takes moves as a list or as a number (MoveCount).
func (f *RescalePlannedFields) UnmarshalJSON(b []byte) error {
	type plain RescalePlannedFields
	var v struct {
		plain
		Moves json.RawMessage `json:"moves"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = RescalePlannedFields(v.plain)
	return listOrNumber(v.Moves, "moves", &f.Moves, &f.MoveCount)
}

// MarshalJSON: a restart's from and to are the parallelism; it has no
// slice.
func (f RescaleCapturedFields) MarshalJSON() ([]byte, error) {
	if f.Mode == "restart" {
		return json.Marshal(struct {
			Bytes int    `json:"bytes"`
			From  int    `json:"from"`
			ID    uint64 `json:"id"`
			Mode  string `json:"mode"`
			Ms    int64  `json:"ms"`
			Op    string `json:"op"`
			To    int    `json:"to"`
		}{f.Bytes, f.FromN, f.ID, f.Mode, f.Ms, f.Op, f.ToN})
	}
	type plain RescaleCapturedFields
	return only(plain(f), "bytes", "checkpoint", "file", "from", "id", "op", "precopy", "range", "to", "watermark")
}

// UnmarshalJSON takes from and to as instances or as numbers (FromN,
// ToN).
func (f *RescaleCapturedFields) UnmarshalJSON(b []byte) error {
	type plain RescaleCapturedFields
	var v struct {
		plain
		From json.RawMessage `json:"from"`
		To   json.RawMessage `json:"to"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = RescaleCapturedFields(v.plain)
	if err := stringOrNumber(v.From, "from", &f.From, &f.FromN); err != nil {
		return err
	}
	return stringOrNumber(v.To, "to", &f.To, &f.ToN)
}

// MarshalJSON: a restart's has catch_up_ms and no moves, a live one's the
// other way round.
func (f RescaleDoneFields) MarshalJSON() ([]byte, error) {
	type plain RescaleDoneFields
	if f.Mode == "restart" {
		return only(plain(f), "bytes", "bytes_moved", "catch_up_ms", "from", "id", "mode", "op", "pause_ms", "to", "total_ms")
	}
	return only(plain(f), "bytes", "bytes_moved", "from", "id", "moves", "op", "pause_ms", "to", "total_ms")
}

// MarshalJSON: nothing held is {held: 0}.
func (f HeldRecordsFields) MarshalJSON() ([]byte, error) {
	type plain HeldRecordsFields
	if f.Held == 0 {
		return only(plain(f), "held")
	}
	return json.Marshal(plain(f))
}

// MarshalJSON: full, the sizes; room again, the pause.
func (f BackupFullFields) MarshalJSON() ([]byte, error) {
	type plain BackupFullFields
	if f.Full {
		return only(plain(f), "full", "limit_bytes", "mem_bytes", "spill_bytes")
	}
	return only(plain(f), "full", "paused_ms")
}

// listOrNumber decodes raw, a list of strings or a number.
func listOrNumber(raw json.RawMessage, name string, list *[]string, n *int) error {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil
	case raw[0] == '[':
		return field(name, json.Unmarshal(raw, list))
	}
	return field(name, json.Unmarshal(raw, n))
}

// stringOrNumber decodes raw, a string or a number.
func stringOrNumber(raw json.RawMessage, name string, s *string, n *int) error {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil
	case raw[0] == '"':
		return field(name, json.Unmarshal(raw, s))
	}
	return field(name, json.Unmarshal(raw, n))
}

// field names the field a decoding error is in.
func field(name string, err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		te.Field = name
		return te
	}
	return fmt.Errorf("%s: %w", name, err)
}
