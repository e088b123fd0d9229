package events

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// DecodeLine decodes one line of events.jsonl into an Event exactly as
// json.Unmarshal does (Event.UnmarshalJSON), several times faster on the
// lines the coordinator writes: spate view decodes millions of them. The
// fast path reads the envelope itself, takes the keys in any order and
// skips unknown ones (the schema version "v") as json.Unmarshal does, and
// decodes the fields in place by the kind when the kind comes first; it
// gives up, and json.Unmarshal decides with its own error, on anything it
// is not sure of: a repeated key, a key in other case, a time with an
// offset, a number out of range, bad syntax, fields that do not decode.
// names, if not nil, keeps one copy of each node and instance name; it is
// the caller's, one per goroutine.
func DecodeLine(line []byte, names Names) (Event, error) {
	if e, ok := fastLine(line, names); ok {
		return e, nil
	}
	var e Event
	err := json.Unmarshal(line, &e)
	return e, err
}

// Names keeps one copy of each node and instance name a decoder meets: a
// recording names a handful of them millions of times. A nil Names makes
// a copy each time. It is not safe for concurrent use.
type Names map[string]string

func (n Names) get(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	if n != nil && len(n) < 1<<12 {
		n[s] = s
	}
	return s
}

// envelopeKeys are the keys json.Unmarshal matches, in any case, to an
// event's fields.
var envelopeKeys = []string{"seq", "time", "kind", "node", "instance", "text", "fields"}

func fastLine(line []byte, names Names) (Event, bool) {
	var e Event
	var fields []byte
	decoded := false
	c := &cursor{b: line}
	if !c.eat('{') {
		return e, false
	}
	var seen uint8
	for first := true; !c.eat('}'); first = false {
		if !first && !c.eat(',') {
			return e, false
		}
		c.ws()
		key, ok := c.rawString()
		if !ok || !c.eat(':') {
			return e, false
		}
		var bit uint8
		switch string(key) {
		case "seq":
			bit = 1
			tok, ok := c.number()
			if !ok {
				return e, false
			}
			n, err := strconv.ParseUint(string(tok), 10, 64)
			if err != nil {
				return e, false
			}
			e.Seq = n
		case "time":
			bit = 2
			c.ws()
			raw, ok := c.rawString()
			if !ok || len(raw) == 0 || raw[len(raw)-1] != 'Z' { // an offset: encoding/json keeps it
				return e, false
			}
			ns, ok := parseZ(raw)
			if !ok {
				return e, false
			}
			e.Time = time.Unix(0, ns).UTC()
		case "kind", "node", "instance", "text":
			// Without escapes (the coordinator's lines), from the line's
			// bytes: a kind is its constant, a name one copy.
			c.ws()
			raw, plain := c.rawString()
			var s string
			if !plain {
				if s, ok = c.str(); !ok {
					return e, false
				}
			}
			switch string(key) {
			case "kind":
				bit, e.Kind = 4, Kind(s)
				if plain {
					e.Kind = InternBytes(raw)
				}
			case "node":
				bit, e.Node = 8, s
				if plain {
					e.Node = names.get(raw)
				}
			case "instance":
				bit, e.Instance = 16, s
				if plain {
					e.Instance = names.get(raw)
				}
			default:
				bit, e.Text = 32, s
				if plain {
					e.Text = string(raw)
				}
			}
		case "fields":
			bit = 64
			c.ws()
			if seen&4 != 0 { // the kind came first, as the coordinator writes it
				if p, n, ok := DecodeFieldsFrom(e.Kind, c.b[c.i:]); ok {
					e.Fields, decoded = p, true
					c.i += n
					break
				}
			}
			start := c.i
			if !c.skip(0) {
				return e, false
			}
			fields = c.b[start:c.i]
		default:
			// json.Unmarshal skips a key that is no field (the schema
			// version "v"), but matches one in other case to its field:
			// that is for it to decide.
			for _, f := range envelopeKeys {
				if strings.EqualFold(string(key), f) {
					return e, false
				}
			}
			if !c.skip(0) {
				return e, false
			}
			continue
		}
		if seen&bit != 0 {
			return e, false
		}
		seen |= bit
	}
	c.ws()
	if c.i != len(c.b) {
		return e, false
	}
	if !decoded {
		p, err := DecodeFields(e.Kind, fields)
		if err != nil {
			return e, false
		}
		e.Fields = p
	}
	return e, true
}

// ParseTime reads an RFC 3339 time as events.jsonl has it, in unix
// nanoseconds: the coordinator's UTC form (2026-11-30T05:16:01.296981097Z)
// fast, any other through time.Parse.
func ParseTime(b []byte) (int64, bool) {
	if ns, ok := parseZ(b); ok {
		return ns, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, false
	}
	return t.UnixNano(), true
}

// parseZ reads YYYY-MM-DDTHH:MM:SS[.F{1,9}]Z, refusing what time.Parse
// refuses (a field out of range, a day the month does not have).
func parseZ(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return 0, false
	}
	bad := false
	d := func(i, n int) int {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				bad = true
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, dd, h, mi, s := d(0, 4), d(5, 2), d(8, 2), d(11, 2), d(14, 2), d(17, 2)
	ns := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return 0, false
		}
		ns = d(20, len(frac)-1)
		for k := len(frac) - 1; k < 9; k++ {
			ns *= 10
		}
	}
	if bad || y < 1700 || y > 2200 || mo < 1 || mo > 12 || dd < 1 || h > 23 || mi > 59 || s > 59 { // UnixNano holds 1678 to 2262
		return 0, false
	}
	t := time.Date(y, time.Month(mo), dd, h, mi, s, ns, time.UTC)
	if t.Day() != dd { // 31 April
		return 0, false
	}
	return t.UnixNano(), true
}
