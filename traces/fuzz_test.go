package traces

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func FuzzSplitFields(f *testing.F) {
	for _, s := range []string{"a,b,c", `"x,y", "q""q" ,z`, "\"open", "a\t\tb", "", ",,,", `"a"b`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, line []byte, csv bool) {
		sep := byte('\t')
		if csv {
			sep = ','
		}
		fields, _, err := splitFields(line, sep, csv, nil, nil)
		if err != nil {
			return
		}
		if len(fields) == 0 {
			t.Fatalf("no fields for %q", line)
		}
		if !csv && len(fields) != bytes.Count(line, []byte{'\t'})+1 {
			t.Fatalf("%d fields for %d tabs", len(fields), bytes.Count(line, []byte{'\t'}))
		}
	})
}

// FuzzTraceLine parses one data line under a fixed header, as Open and
// Next do, and checks that an error is one line.
func FuzzTraceLine(f *testing.F) {
	for _, s := range []string{"h,807256800,3", "h,2023-11-16 18:17:03.97,1", "h,abc,1", "h,1", `"h,1",1.5,-2`, "h,2023-11-16T18:17:03+01:00,9"} {
		f.Add([]byte(s))
	}
	lay := traceLayout{sep: ',', quote: true, header: []string{"host", "time", "value"}, tcol: 1, kcol: 0, vcol: 2}
	f.Fuzz(func(t *testing.T, line []byte) {
		d := decoder{lay: &lay}
		rec, msg := d.decode(line)
		if msg != "" {
			if strings.ContainsAny(msg, "\n") {
				t.Fatalf("message spans lines: %q", msg)
			}
			return
		}
		if !bytes.Contains(line, rec.Key) {
			t.Fatalf("key %q not in the line %q", rec.Key, line)
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"807256800", "1.5", "2023-11-16 18:17:03.9799600", "2023-11-16T18:17:03Z", "2023-11-16T18:17:03-05:00", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, ok := parseTime([]byte(s))
		if !ok {
			return
		}
		// Integer epoch seconds agree with strconv.
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && s[0] != '+' && ms != n*1000 {
			t.Fatalf("parseTime(%q) = %d", s, ms)
		}
	})
}

func FuzzParseRates(f *testing.F) {
	for _, s := range []string{"1 2 3", "0\n0\n", "1 -2", "x", "4294967296", " \t\r\n", "12 34\n56"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		counts, err := parseRates(bytes.NewReader(data), "f")
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 || le.Line > bytes.Count(data, []byte{'\n'})+1 {
				t.Fatalf("error %v for %q", err, data)
			}
			return
		}
		// Differential: the same tokens through strings.Fields and strconv.
		tokens := strings.Fields(string(data))
		if len(tokens) != len(counts) {
			t.Fatalf("%d counts, %d tokens", len(counts), len(tokens))
		}
		for i, tok := range tokens {
			n, err := strconv.ParseUint(tok, 10, 32)
			if err != nil || uint32(n) != counts[i] {
				t.Fatalf("token %q parsed as %d", tok, counts[i])
			}
		}
	})
}

// FuzzOpenFile opens arbitrary bytes as a record trace and as a rate trace
// and reads them: errors are fine, panics and inconsistent counts are not.
func FuzzOpenFile(f *testing.F) {
	f.Add([]byte("host,time\na,1\nb,2\n"))
	f.Add([]byte("host\ttime\na\t1\n\n"))
	f.Add([]byte("1 2 3\n"))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Add([]byte("BZh91AY&SY"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, spec := range []string{"trace:" + p + "?time=time&key=host", "rate:" + p} {
			src, err := Open(spec, Options{Partitions: 2})
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error spans lines: %q", err)
				}
				continue
			}
			var n uint64
			for part := range 2 {
				r, err := src.Open(part, 0)
				if err != nil {
					t.Fatal(err)
				}
				for {
					_, ok, err := r.Next()
					if err != nil {
						t.Fatalf("%s: Next after a clean Open: %v", spec, err)
					}
					if !ok {
						break
					}
					n++
				}
				r.Close()
			}
			if want := src.(Sized).Stats().Records; n != want {
				t.Fatalf("%s: read %d records, Stats says %d", spec, n, want)
			}
		}
	})
}
