package job

import (
	"strconv"
	"unicode/utf8"
)

// parseResultFast decodes a result line of exactly the shape AppendJSON
// writes (keys in its order, strings without escapes, integers), without
// reflection; ok is false for anything else, which encoding/json then
// decodes (or rejects). Where it says ok, its result is the one
// encoding/json would give: FuzzParseResultFast holds it to that.
func parseResultFast(b []byte) (r Result, ok bool) {
	p := resultParser{b: b}
	if !p.lit(`{"op":`) || !p.str(&r.Op) || !p.lit(`,"key":`) || !p.str(&r.Key) ||
		!p.lit(`,"window":`) || !p.int(&r.Window) || !p.lit(`,"count":`) || !p.int(&r.Count) ||
		!p.lit(`,"sum":`) || !p.int(&r.Sum) {
		return r, false
	}
	if p.lit(`,"total":`) && !p.int(&r.Total) {
		return r, false
	}
	if p.lit(`,"top":[`) {
		for {
			var t TopKey
			if !p.lit(`{"key":`) || !p.str(&t.Key) || !p.lit(`,"count":`) || !p.int(&t.Count) || !p.lit("}") {
				return r, false
			}
			r.Top = append(r.Top, t)
			if p.lit("]") {
				break
			}
			if !p.lit(",") {
				return r, false
			}
		}
	}
	return r, p.lit("}") && p.i == len(p.b)
}

type resultParser struct {
	b []byte
	i int
}

// lit consumes s if the input continues with it.
func (p *resultParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str reads a JSON string with no escape and no control character, of
// valid UTF-8 (encoding/json would change invalid bytes to U+FFFD).
func (p *resultParser) str(out *string) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			if !utf8.Valid(p.b[start:j]) {
				return false
			}
			*out, p.i = string(p.b[start:j]), j+1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// int reads a JSON integer that fits an int64: -?(0|[1-9][0-9]*).
func (p *resultParser) int(out *int64) bool {
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	d := j
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	if j == d || (p.b[d] == '0' && j > d+1) {
		return false
	}
	if j < len(p.b) && (p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E') {
		return false
	}
	v, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	if err != nil {
		return false
	}
	*out, p.i = v, j
	return true
}
