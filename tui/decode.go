package tui

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"spate/events"
)

// decodeEvent decodes one events.jsonl line into an events.Event exactly
// as json.Unmarshal does, faster on the lines the coordinator writes:
// decoding is most of what a seek in spate view costs. The fast path reads
// the envelope itself, takes the keys in any order and skips unknown ones
// (the schema version "v") as json.Unmarshal does, and hands the fields to
// events.DecodeFields as json.Unmarshal does; it gives up (and
// json.Unmarshal decides, with its own error) on anything it is not sure
// of: a repeated key, a key in other case, a time with an offset, a
// number out of range, bad syntax, fields that do not decode. A string
// with escapes is unquoted by encoding/json itself.
func decodeEvent(line []byte) (events.Event, error) { return decodeNamed(line, nil) }

// decodeNamed is decodeEvent keeping node and instance names in n.
func decodeNamed(line []byte, n names) (events.Event, error) {
	if e, ok := fastEvent(line, n); ok {
		return e, nil
	}
	var e events.Event
	err := json.Unmarshal(line, &e)
	return e, err
}

// names keeps one copy of each node and instance name a decoder meets: a
// recording names a handful of them millions of times. A nil names makes
// a copy each time. Not safe for concurrent use: one per goroutine.
type names map[string]string

func (n names) get(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	if n != nil && len(n) < 1<<12 {
		n[s] = s
	}
	return s
}

// dec is a cursor over one line.
type dec struct {
	b []byte
	i int
}

func (d *dec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *dec) eat(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *dec) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func fastEvent(line []byte, n names) (events.Event, bool) {
	var e events.Event
	var fields []byte
	decoded := false
	d := &dec{b: line}
	if !d.eat('{') {
		return e, false
	}
	var seen uint8
	first := true
	for {
		if d.eat('}') {
			break
		}
		if !first && !d.eat(',') {
			return e, false
		}
		first = false
		key, ok := d.rawString()
		if !ok || !d.eat(':') {
			return e, false
		}
		var bit uint8
		switch string(key) {
		case "seq":
			bit = 1
			tok, ok := d.number()
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
			raw, ok := d.rawString()
			if !ok {
				return e, false
			}
			ns, ok := parseUTC(raw)
			if !ok {
				return e, false
			}
			e.Time = time.Unix(0, ns).UTC()
		case "kind", "node", "instance", "text":
			// Without escapes (the coordinator's lines), from the line's
			// bytes: a kind is its constant, a name one copy (n).
			d.ws()
			at := d.i
			raw, plain := d.rawString()
			var str string
			if !plain {
				d.i = at
				var ok bool
				if str, ok = d.str(); !ok {
					return e, false
				}
			}
			switch string(key) {
			case "kind":
				bit, e.Kind = 4, events.Kind(str)
				if plain {
					e.Kind = events.InternBytes(raw)
				}
			case "node":
				bit, e.Node = 8, str
				if plain {
					e.Node = n.get(raw)
				}
			case "instance":
				bit, e.Instance = 16, str
				if plain {
					e.Instance = n.get(raw)
				}
			default:
				bit, e.Text = 32, str
				if plain {
					e.Text = string(raw)
				}
			}
		case "fields":
			bit = 64
			d.ws()
			if seen&4 != 0 { // the kind came first, as the coordinator writes it
				if p, n, ok := events.DecodeFieldsFrom(e.Kind, d.b[d.i:]); ok {
					e.Fields, decoded = p, true
					d.i += n
					break
				}
			}
			start := d.i
			if !d.skip(0) {
				return e, false
			}
			fields = d.b[start:d.i]
		default:
			// json.Unmarshal skips a key that is no field (the schema
			// version "v"), but matches one in other case to its field:
			// that is for it to decide.
			for _, f := range []string{"seq", "time", "kind", "node", "instance", "text", "fields"} {
				if strings.EqualFold(string(key), f) {
					return e, false
				}
			}
			if !d.skip(0) {
				return e, false
			}
			continue
		}
		if seen&bit != 0 {
			return e, false
		}
		seen |= bit
	}
	d.ws()
	if d.i != len(d.b) {
		return e, false
	}
	if !decoded {
		p, err := events.DecodeFields(e.Kind, fields)
		if err != nil {
			return e, false
		}
		e.Fields = p
	}
	return e, true
}

// parseUTC is parseTime for the Z form only (what time.Time's JSON gives
// back as UTC); an offset goes to encoding/json, which keeps it.
func parseUTC(b []byte) (int64, bool) {
	if len(b) < 20 || b[len(b)-1] != 'Z' {
		return 0, false
	}
	return fastTime(b)
}

// rawString reads a string with no escapes and no control characters, in
// valid UTF-8, and returns its bytes.
func (d *dec) rawString() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	start := d.i
	var high byte // the OR of the bytes: ASCII when below 0x80
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, high < 0x80 || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		high |= c
		d.i++
	}
	return nil, false
}

// str reads a string; one with escapes or odd bytes is unquoted by
// encoding/json.
func (d *dec) str() (string, bool) {
	d.ws()
	at := d.i
	if s, ok := d.rawString(); ok {
		return string(s), true
	}
	d.i = at
	end, ok := d.skipString()
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(d.b[at:end], &s); err != nil {
		return "", false
	}
	d.i = end
	return s, true
}

// skipString finds the end of the string at d.i (after its closing
// quote), escapes included.
func (d *dec) skipString() (int, bool) {
	i := d.i
	if i >= len(d.b) || d.b[i] != '"' {
		return 0, false
	}
	for i++; i < len(d.b); i++ {
		switch d.b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

func (d *dec) lit(s string) bool {
	d.ws()
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// number reads a JSON number token, checking its grammar.
func (d *dec) number() ([]byte, bool) {
	d.ws()
	start, b := d.i, d.b
	i := d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return b[start:i], true
}

// skip moves past one JSON value, checking its grammar as encoding/json
// does (a string with escapes is checked by encoding/json itself).
func (d *dec) skip(depth int) bool {
	if depth > 64 {
		return false
	}
	switch c := d.peek(); {
	case c == '"':
		at := d.i
		if _, ok := d.rawString(); ok {
			return true
		}
		d.i = at
		_, ok := d.str() // escapes: encoding/json checks them
		return ok
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.i++
		if d.eat(closing) {
			return true
		}
		for {
			if c == '{' {
				if d.peek() != '"' || !d.skip(depth+1) || !d.eat(':') {
					return false
				}
			}
			if !d.skip(depth + 1) {
				return false
			}
			if d.eat(closing) {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == 't':
		return d.lit("true")
	case c == 'f':
		return d.lit("false")
	case c == 'n':
		return d.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		_, ok := d.number()
		return ok
	}
	return false
}
