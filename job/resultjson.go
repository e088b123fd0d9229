package job

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends r as one JSON object, byte for byte what
// encoding/json.Marshal(r) produces, without reflection or allocation
// beyond growing b. The operators use it on the path that fires windows.
func (r *Result) AppendJSON(b []byte) []byte {
	b = append(b, `{"op":`...)
	b = appendJSONString(b, r.Op)
	b = append(b, `,"key":`...)
	b = appendJSONString(b, r.Key)
	b = append(b, `,"window":`...)
	b = strconv.AppendInt(b, r.Window, 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, r.Count, 10)
	b = append(b, `,"sum":`...)
	b = strconv.AppendInt(b, r.Sum, 10)
	if r.Total != 0 {
		b = append(b, `,"total":`...)
		b = strconv.AppendInt(b, r.Total, 10)
	}
	if len(r.Top) > 0 {
		b = append(b, `,"top":[`...)
		for i, t := range r.Top {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			b = appendJSONString(b, t.Key)
			b = append(b, `,"count":`...)
			b = strconv.AppendInt(b, t.Count, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// ResultKey returns key as it reads back from a result line. Keys are
// written as JSON strings, where every byte that is not part of valid UTF-8
// becomes U+FFFD (as with encoding/json); the oracle uses ResultKey so that
// its results compare equal to what the sink wrote, whatever the keys.
func ResultKey(key []byte) string {
	if utf8.Valid(key) {
		return string(key)
	}
	out := make([]byte, 0, len(key)+8)
	for i := 0; i < len(key); {
		c, n := utf8.DecodeRune(key[i:])
		if c == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, key[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

func (id ResultID) String() string {
	return id.Op + "/" + strconv.Quote(id.Key) + "@" + strconv.FormatInt(id.Window, 10)
}

const jsonHex = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped exactly as
// encoding/json does with HTML escaping on.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', jsonHex[c>>4], jsonHex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', jsonHex[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
