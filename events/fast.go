package events

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The fast path of DecodeFields: a decoder for the payload types, built
// once per type from its fields, that reads the JSON the coordinator
// writes several times faster than encoding/json (a recording of millions
// of events is decoded whole by spate view). It gives the very value
// json.Unmarshal gives, or gives up and lets json.Unmarshal decide (and
// err): on a key that matches a field only in other case, a repeated key,
// a string with escapes where a key is, a number that does not fit, a
// type it does not handle (one with its own UnmarshalJSON or
// UnmarshalText). FuzzFastFields holds it to that.

// cursor is a position in a JSON text.
type cursor struct {
	b []byte
	i int
}

func (c *cursor) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *cursor) peek() byte {
	c.ws()
	if c.i < len(c.b) {
		return c.b[c.i]
	}
	return 0
}

func (c *cursor) eat(b byte) bool {
	if c.peek() == b {
		c.i++
		return true
	}
	return false
}

func (c *cursor) lit(s string) bool {
	c.ws()
	if len(c.b)-c.i >= len(s) && string(c.b[c.i:c.i+len(s)]) == s {
		c.i += len(s)
		return true
	}
	return false
}

// rawString reads a string without escapes or control characters, in
// valid UTF-8; false leaves the cursor where it was.
func (c *cursor) rawString() ([]byte, bool) {
	at := c.i
	if !c.eat('"') {
		return nil, false
	}
	start := c.i
	var high byte // the OR of the bytes: ASCII when below 0x80
	for c.i < len(c.b) {
		switch b := c.b[c.i]; {
		case b == '"':
			s := c.b[start:c.i]
			c.i++
			if high >= 0x80 && !utf8.Valid(s) {
				c.i = at
				return nil, false
			}
			return s, true
		case b == '\\' || b < 0x20:
			c.i = at
			return nil, false
		default:
			high |= b
		}
		c.i++
	}
	c.i = at
	return nil, false
}

// str reads a string; one with escapes (or odd bytes) is unquoted by
// encoding/json.
func (c *cursor) str() (string, bool) {
	c.ws()
	if s, ok := c.rawString(); ok {
		return string(s), true
	}
	if c.i >= len(c.b) || c.b[c.i] != '"' {
		return "", false
	}
	end := c.i + 1
	for ; end < len(c.b); end++ {
		if c.b[end] == '\\' {
			end++
		} else if c.b[end] == '"' {
			break
		}
	}
	if end >= len(c.b) {
		return "", false
	}
	var s string
	if json.Unmarshal(c.b[c.i:end+1], &s) != nil {
		return "", false
	}
	c.i = end + 1
	return s, true
}

// number reads a number token, checking its grammar.
func (c *cursor) number() ([]byte, bool) {
	c.ws()
	b, i := c.b, c.i
	start := i
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
	c.i = i
	return b[start:i], true
}

// skip moves past any value, checking its grammar as encoding/json does.
func (c *cursor) skip(depth int) bool {
	if depth > 64 {
		return false
	}
	switch b := c.peek(); {
	case b == '"':
		_, ok := c.str()
		return ok
	case b == '{' || b == '[':
		end := byte('}')
		if b == '[' {
			end = ']'
		}
		c.i++
		if c.eat(end) {
			return true
		}
		for {
			if b == '{' {
				if _, ok := c.str(); !ok || !c.eat(':') {
					return false
				}
			}
			if !c.skip(depth + 1) {
				return false
			}
			if c.eat(end) {
				return true
			}
			if !c.eat(',') {
				return false
			}
		}
	case b == 't':
		return c.lit("true")
	case b == 'f':
		return c.lit("false")
	case b == 'n':
		return c.lit("null")
	case b == '-' || b >= '0' && b <= '9':
		_, ok := c.number()
		return ok
	}
	return false
}

// valueDec decodes one value into v; false: give up.
type valueDec func(c *cursor, v reflect.Value, depth int) bool

type fieldDec struct {
	name  string
	index int
	dec   valueDec
}

var (
	decoders sync.Map // reflect.Type -> valueDec (nil: not handled)

	unmarshaler     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoderOf is the decoder of type t, nil if the fast path does not
// handle it.
func decoderOf(t reflect.Type) valueDec {
	if d, ok := decoders.Load(t); ok {
		return d.(valueDec)
	}
	d := buildDecoder(t, map[reflect.Type]bool{})
	decoders.Store(t, d)
	return d
}

func buildDecoder(t reflect.Type, building map[reflect.Type]bool) valueDec {
	if reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) ||
		t.Implements(unmarshaler) || t.Implements(textUnmarshaler) || building[t] {
		return nil
	}
	building[t] = true
	defer delete(building, t)
	switch t.Kind() {
	case reflect.Bool:
		return decBool
	case reflect.String:
		return decString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return decNumber
	case reflect.Pointer:
		elem := buildDecoder(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(c *cursor, v reflect.Value, depth int) bool {
			if isNull, ok := null(c, v); isNull || !ok {
				return ok
			}
			p := reflect.New(t.Elem())
			if !elem(c, p.Elem(), depth) {
				return false
			}
			v.Set(p)
			return true
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // base64, in encoding/json
		}
		elem := buildDecoder(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(c *cursor, v reflect.Value, depth int) bool {
			if depth > 64 {
				return false
			}
			if isNull, ok := null(c, v); isNull || !ok {
				return ok
			}
			if !c.eat('[') {
				return false
			}
			s := reflect.MakeSlice(t, 0, 4)
			if !c.eat(']') {
				for {
					s = reflect.Append(s, reflect.Zero(t.Elem()))
					if !elem(c, s.Index(s.Len()-1), depth+1) {
						return false
					}
					if c.eat(']') {
						break
					}
					if !c.eat(',') {
						return false
					}
				}
			}
			v.Set(s)
			return true
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key() != reflect.TypeFor[string]() {
			return nil
		}
		elem := buildDecoder(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(c *cursor, v reflect.Value, depth int) bool {
			if depth > 64 {
				return false
			}
			if isNull, ok := null(c, v); isNull || !ok {
				return ok
			}
			if !c.eat('{') {
				return false
			}
			m := reflect.MakeMap(t)
			if !c.eat('}') {
				for {
					k, ok := c.str()
					if !ok || !c.eat(':') {
						return false
					}
					x := reflect.New(t.Elem()).Elem()
					if !elem(c, x, depth+1) {
						return false
					}
					m.SetMapIndex(reflect.ValueOf(k), x)
					if c.eat('}') {
						break
					}
					if !c.eat(',') {
						return false
					}
				}
			}
			v.Set(m)
			return true
		}
	case reflect.Struct:
		return buildStruct(t, building)
	}
	return nil
}

// null reads a null into v, as its zero (nil for a pointer, slice or
// map); isNull false: the value is not a null.
func null(c *cursor, v reflect.Value) (isNull, ok bool) {
	if c.peek() != 'n' {
		return false, true
	}
	if !c.lit("null") {
		return true, false
	}
	v.SetZero()
	return true, true
}

func buildStruct(t reflect.Type, building map[reflect.Type]bool) valueDec {
	var fields []fieldDec
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous || !f.IsExported() {
			return nil
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if strings.Contains(opts, "string") {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		d := buildDecoder(f.Type, building)
		if d == nil {
			return nil
		}
		fields = append(fields, fieldDec{name: name, index: i, dec: d})
	}
	if len(fields) > 64 {
		return nil
	}
	return func(c *cursor, v reflect.Value, depth int) bool {
		if depth > 64 {
			return false
		}
		if c.peek() == 'n' {
			return c.lit("null") // a no-op on a struct
		}
		if !c.eat('{') {
			return false
		}
		if c.eat('}') {
			return true
		}
		var seen uint64
		for {
			c.ws()
			key, ok := c.rawString()
			if !ok || !c.eat(':') {
				return false
			}
			k := -1
			for j := range fields {
				if fields[j].name == string(key) {
					k = j
					break
				}
			}
			if k < 0 {
				for j := range fields {
					if strings.EqualFold(fields[j].name, string(key)) {
						return false // encoding/json matches it: its to decide
					}
				}
				if !c.skip(depth + 1) {
					return false
				}
			} else {
				if seen&(1<<k) != 0 {
					return false
				}
				seen |= 1 << k
				if !fields[k].dec(c, v.Field(fields[k].index), depth+1) {
					return false
				}
			}
			if c.eat('}') {
				return true
			}
			if !c.eat(',') {
				return false
			}
		}
	}
}

func decBool(c *cursor, v reflect.Value, _ int) bool {
	switch c.peek() {
	case 't':
		if c.lit("true") {
			v.SetBool(true)
			return true
		}
	case 'f':
		if c.lit("false") {
			v.SetBool(false)
			return true
		}
	case 'n':
		return c.lit("null")
	}
	return false
}

func decString(c *cursor, v reflect.Value, _ int) bool {
	if c.peek() == 'n' {
		return c.lit("null")
	}
	s, ok := c.str()
	if ok {
		v.SetString(s)
	}
	return ok
}

// decNumber decodes a number into v's kind of number as encoding/json
// does: an integer kind takes only a whole number that fits.
func decNumber(c *cursor, v reflect.Value, _ int) bool {
	if c.peek() == 'n' {
		return c.lit("null")
	}
	tok, ok := c.number()
	if !ok {
		return false
	}
	neg, mag, whole := wholeNumber(tok)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !whole || mag > 1<<63 || (!neg && mag == 1<<63) {
			return false // not a whole number, or out of int64: encoding/json errs
		}
		n := int64(mag)
		if neg {
			n = -n // -1<<63 too: its magnitude wraps to itself
		}
		if v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !whole || neg || v.OverflowUint(mag) { // strconv.ParseUint takes no sign, not even -0
			return false
		}
		v.SetUint(mag)
	default:
		if whole && mag <= 1<<53 { // exactly a float64: what ParseFloat gives
			f := float64(mag)
			if neg {
				f = -f
			}
			if !v.OverflowFloat(f) {
				v.SetFloat(f)
				return true
			}
		}
		n, err := strconv.ParseFloat(string(tok), v.Type().Bits())
		if err != nil || v.OverflowFloat(n) {
			return false
		}
		v.SetFloat(n)
	}
	return true
}

// wholeNumber reads a number token of digits only, with a minus or not:
// its magnitude; whole false for a fraction, an exponent or more than
// 19 digits (then strconv decides).
func wholeNumber(tok []byte) (neg bool, mag uint64, whole bool) {
	if len(tok) > 0 && tok[0] == '-' {
		neg, tok = true, tok[1:]
	}
	if len(tok) == 0 || len(tok) > 19 {
		return neg, 0, false
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return neg, 0, false
		}
		mag = mag*10 + uint64(c-'0')
	}
	return neg, mag, true
}

// fastFields decodes raw into a new value of payload type t; false: the
// fast path gave up.
func fastFields(t reflect.Type, raw []byte) (Payload, bool) {
	d := decoderOf(t)
	if d == nil {
		return nil, false
	}
	v := reflect.New(t).Elem()
	c := &cursor{b: raw}
	if !d(c, v, 0) {
		return nil, false
	}
	c.ws()
	if c.i != len(c.b) {
		return nil, false
	}
	return v.Interface().(Payload), true
}

// DecodeFieldsFrom decodes the fields of an event of kind k from the
// start of b, which holds more after them (the rest of a line): the
// payload and how many bytes of b it took, as DecodeFields would decode
// exactly those bytes. ok is false where the fast path gives up (a kind
// it does not know or handle, fields it is not sure of); then the caller
// finds the fields' end itself and calls DecodeFields.
func DecodeFieldsFrom(k Kind, b []byte) (p Payload, n int, ok bool) {
	t, known := types[k]
	if !known {
		return nil, 0, false
	}
	c := &cursor{b: b}
	if c.peek() == 'n' {
		if !c.lit("null") {
			return nil, 0, false
		}
		return nil, c.i, true
	}
	d := decoderOf(t)
	if d == nil {
		return nil, 0, false
	}
	v := reflect.New(t).Elem()
	if !d(c, v, 0) {
		return nil, 0, false
	}
	return v.Interface().(Payload), c.i, true
}
