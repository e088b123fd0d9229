package traces

import (
	"fmt"
	"strings"
	"testing"

	"spate/job"
)

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"807256800", 807256800000, true},
		{"807256800.123456", 807256800123, true},
		{"807256800.9", 807256800900, true},
		{"12.", 12000, true},
		{"-1.5", -1500, true},
		{"0", 0, true},
		{"2023-11-16 18:17:03.9799600", 1700158623979, true},
		{"2023-11-16 18:17:03", 1700158623000, true},
		{"2023-11-16T18:17:03Z", 1700158623000, true},
		{"2023-11-16T18:17:03.5+01:00", 1700155023500, true},
		{"2023-11-16T18:17:03-00:30", 1700160423000, true},
		{"2024-02-29 00:00:00", 1709164800000, true},
		{"2023-02-29 00:00:00", 0, false},
		{"2023-13-01 00:00:00", 0, false},
		{"2023-11-16 24:00:00", 0, false},
		{"2023-11-16 18:17:03.", 0, false},
		{"2023-11-16 18:17:03 UTC", 0, false},
		{"abc", 0, false},
		{"", 0, false},
		{"1e9", 0, false},
		{".5", 0, false},
		{"1234567890123456", 0, false},
	} {
		got, ok := parseTime([]byte(c.in))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseTime(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestSplitFields(t *testing.T) {
	for _, c := range []struct {
		line  string
		sep   byte
		quote bool
		want  string // fields joined by |
		err   string
	}{
		{"a,b,c", ',', true, "a|b|c", ""},
		{" a , b ,c ", ',', true, "a|b|c", ""},
		{"a,,", ',', true, "a||", ""},
		{`"x,y", "say ""hi""" ,z`, ',', true, `x,y|say "hi"|z`, ""},
		{`"open,b`, ',', true, "", "field 1: unterminated quote"},
		{`"a"b,c`, ',', true, "", "field 1: text after the closing quote"},
		{`a"b,c`, ',', true, `a"b|c`, ""},
		{"a\t\tc\t", '\t', false, "a||c|", ""},
		{" a \t b ", '\t', false, "a|b", ""},
		{`"q"	b`, '\t', false, `"q"|b`, ""},
		{"", ',', true, "", ""},
	} {
		fields, _, err := splitFields([]byte(c.line), c.sep, c.quote, nil, nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("splitFields(%q): error %v, want %q", c.line, err, c.err)
			}
			continue
		}
		var got []string
		for _, f := range fields {
			got = append(got, string(f))
		}
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("splitFields(%q) = %q, %v; want %q", c.line, strings.Join(got, "|"), err, c.want)
		}
	}
}

func TestTraceMalformed(t *testing.T) {
	header := "host,time,bytes\n"
	good := "a,100,1\nb,101,2\n"
	for _, c := range []struct {
		name  string
		file  string
		data  string
		query string
		line  int
		want  string
	}{
		{"bad time", "trace.csv", header + good + "c,abc,3\n", "time=time&key=host", 4,
			`time "abc": not epoch seconds, RFC 3339 or 2006-01-02 15:04:05`},
		{"bad time after blank lines", "trace.csv", header + "\n" + good + "\n\n" + "c,12:00,3\n", "time=time&key=host", 7, `time "12:00"`},
		{"bad value", "trace.csv", header + good + "c,102,many\n", "time=time&key=host&value=bytes", 4, `value "many": not an integer`},
		{"too few fields", "trace.csv", header + good + "c,102\n", "time=time&key=host", 4, "2 fields, the header has 3"},
		{"too many fields", "trace.csv", header + "c,102,1,x\n", "time=time&key=host", 2, "4 fields, the header has 3"},
		{"unterminated quote", "trace.csv", header + good + "\"c,102,1\n", "time=time&key=host", 4, "unterminated quote"},
		{"no column", "trace.csv", header + good, "time=time&key=foo", 1, `no column "foo" (have host, time, bytes)`},
		{"no value column", "trace.csv", header + good, "time=time&key=host&value=size", 1, `no column "size"`},
		{"no header", "trace.csv", "", "time=time&key=host", 1, "no header line"},
		{"tsv", "trace.tsv", "host\ttime\n" + "a\t1\n" + "b\tnever\n", "time=time&key=host", 3, `time "never"`},
		{"crlf", "trace.csv", "host,time\r\na,1\r\nb,x\r\n", "time=time&key=host", 3, `time "x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, c.file, []byte(c.data))
			_, err := Open("trace:"+p+"?"+c.query, Options{})
			wantLineErr(t, err, p, c.line, c.want)
		})
	}
	t.Run("gzip line numbers", func(t *testing.T) {
		p := write(t, "t.csv.gz", gzipped(t, []byte(header+good+good+"z,1,oops\n")))
		_, err := Open("trace:"+p+"?time=time&key=host&value=bytes", Options{})
		wantLineErr(t, err, p, 6, `value "oops"`)
	})
	t.Run("missing key parameter lists the columns", func(t *testing.T) {
		p := write(t, "t.csv", []byte(header+good))
		_, err := Open("trace:"+p+"?time=time", Options{})
		if err == nil || !strings.Contains(err.Error(), "missing key=COL (columns: host, time, bytes)") {
			t.Fatalf("error %v", err)
		}
	})
}

// traceFile makes a CSV of n rows: key "hN", time N/3 s (so times repeat),
// value N%7.
func traceFile(n int, sep string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "host%stime%svalue\n", sep, sep)
	for i := range n {
		if i%1000 == 500 {
			b.WriteString("\n") // a blank line is not a row
		}
		fmt.Fprintf(&b, "h%d%s%d%s%d\n", i, sep, i/3, sep, i%7)
	}
	return b.String()
}

func TestTracePartitions(t *testing.T) {
	const n = 2*indexEvery + 1234 // spans several index marks
	data := traceFile(n, ",")
	// Compressed files are re-decompressed by every Open, which is slow
	// under -race: fewer partitions there.
	for _, f := range []struct {
		name  string
		file  string
		data  func(t *testing.T) []byte
		parts []int
	}{
		{"plain", "t.csv", func(t *testing.T) []byte { return []byte(data) }, []int{1, 3, 7}},
		{"gzip", "t.csv.gz", func(t *testing.T) []byte { return gzipped(t, []byte(data)) }, []int{2}},
		{"bzip2 misnamed", "t.csv", func(t *testing.T) []byte { return bzipped(t, []byte(data)) }, []int{2}},
		{"tsv", "t.txt", func(t *testing.T) []byte { return []byte(traceFile(n, "\t")) }, []int{3}},
	} {
		t.Run(f.name, func(t *testing.T) {
			p := write(t, f.file, f.data(t))
			for _, parts := range f.parts {
				src := mustOpen(t, "trace:"+p+"?time=time&key=host&value=value", Options{Partitions: parts})
				seen := make([]bool, n)
				for part := range parts {
					recs := readN(t, src, part, 0, n+1)
					if uint64(len(recs)) != src.(Sized).PartitionLen(part) {
						t.Fatalf("P=%d partition %d: %d records, PartitionLen %d", parts, part, len(recs), src.(Sized).PartitionLen(part))
					}
					for i, r := range recs {
						row := i*parts + part
						want := rec{fmt.Sprintf("h%d", row), int64(row/3) * 1000, int64(row % 7)}
						if r != want {
							t.Fatalf("P=%d partition %d record %d = %v, want %v", parts, part, i, r, want)
						}
						if seen[row] {
							t.Fatalf("row %d twice", row)
						}
						seen[row] = true
					}
					for _, pos := range []int{0, 1, indexEvery/parts - 1, indexEvery / parts, len(recs) - 2, len(recs), len(recs) + 5} {
						if pos < 0 {
							continue
						}
						got := readN(t, src, part, uint64(pos), 20)
						equalRecs(t, fmt.Sprintf("P=%d partition %d from %d", parts, part, pos), got, recs[min(pos, len(recs)):min(pos+20, len(recs))])
					}
				}
				for row, ok := range seen {
					if !ok {
						t.Fatalf("P=%d: row %d in no partition", parts, row)
					}
				}
				if st := src.(Sized).Stats(); st.Records != n || st.First != 0 || st.Last != int64((n-1)/3)*1000 {
					t.Fatalf("stats %+v", st)
				}
			}
		})
	}
}

func TestTraceBatch(t *testing.T) {
	p := write(t, "t.csv", []byte(traceFile(3000, ",")))
	src := mustOpen(t, "trace:"+p+"?time=time&key=host", Options{Partitions: 2})
	want := readN(t, src, 1, 10, 3000)
	r, _ := src.Open(1, 10)
	defer r.Close()
	buf := make([]job.Record, 100)
	var got []rec
	for {
		n, err := r.(BatchReader).NextBatch(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		for _, x := range buf[:n] { // every key of the batch intact
			got = append(got, rec{string(x.Key), x.Time, x.Value})
		}
	}
	equalRecs(t, "batch", got, want)
}

func TestTraceQuotedCSV(t *testing.T) {
	data := "\xef\xbb\xbf\"the key\", \"when\"\n\"a,b\", 2023-11-16T18:17:03Z\n  plain ,  1700158624.5  \n"
	p := write(t, "q.csv", []byte(data))
	src := mustOpen(t, "trace:"+p+"?time=when&key=the+key", Options{})
	got := readN(t, src, 0, 0, 10)
	want := []rec{{"a,b", 1700158623000, 1}, {"plain", 1700158624500, 1}}
	equalRecs(t, "quoted", got, want)
}

func TestRealRecordTraces(t *testing.T) {
	dir := sharedTraces(t)
	for _, c := range []struct {
		spec string
		n    uint64
	}{
		{"trace:" + dir + "/nasa_19950801.tsv.gz?time=time&key=host&value=response", 30969},
		{"trace:" + dir + "/AzureLLMInferenceTrace_code.csv?time=TIMESTAMP&key=ContextTokens&value=GeneratedTokens", 8819},
		{"trace:" + dir + "/AzureLLMInferenceTrace_conv.csv?time=TIMESTAMP&key=ContextTokens", 19366},
	} {
		t.Run(c.spec, func(t *testing.T) {
			src := mustOpen(t, c.spec, Options{Partitions: 2})
			if st := src.(Sized).Stats(); st.Records != c.n {
				t.Fatalf("%d records, want %d", st.Records, c.n)
			}
			var n uint64
			for p := range 2 {
				n += uint64(len(readN(t, src, p, 0, int(c.n))))
			}
			if n != c.n {
				t.Fatalf("read %d records, want %d", n, c.n)
			}
		})
	}
}

func BenchmarkTraceNext(b *testing.B) {
	p := write(b, "t.csv", []byte(traceFile(50000, ",")))
	src := mustOpen(b, "trace:"+p+"?time=time&key=host&value=value", Options{})
	r, _ := src.Open(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := r.Next(); !ok {
			r.Close()
			r, _ = src.Open(0, 0)
		}
	}
}
