package traces

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"spate/internal/race"
	"strings"
	"testing"
)

func TestParseRates(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want []uint32
	}{
		{"one line", "1 0 3\n", []uint32{1, 0, 3}},
		{"no final newline", "5 6", []uint32{5, 6}},
		{"lines and tabs", "1\t2\r\n3\n\n  4  ", []uint32{1, 2, 3, 4}},
		{"empty", "", nil},
		{"max", "4294967295", []uint32{MaxCount}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseRates(strings.NewReader(c.in), "f")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseRatesErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		line int
		want string
	}{
		{"not a number", "1 2 x1 4", 1, `token 3: "x1" is not a count`},
		{"negative", "1 2\n3 -4", 2, `token 2: "-4" is a negative count`},
		{"fraction", "1\n\n2.5", 3, `token 1: "2.5" is not a count`},
		{"too large", "4294967296", 1, `token 1: "4294967296" is too large`},
		{"huge", "99999999999999999999999", 1, "too large"},
		{"long garbage", strings.Repeat("a", 100), 1, "(cut)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseRates(strings.NewReader(c.in), "workload.txt")
			wantLineErr(t, err, "workload.txt", c.line, c.want)
		})
	}
	// The same error from Open names the file as given.
	p := write(t, "bad.txt", []byte("1 2 3\n4 five 6\n"))
	_, err := Open("rate:"+p, Options{})
	wantLineErr(t, err, p, 2, `token 2: "five" is not a count`)
}

// rateRef lists the records of a rate trace in global order.
func rateRef(counts []int) []rec {
	var out []rec
	for s, c := range counts {
		for j := range c {
			out = append(out, rec{Time: int64(s)*1000 + int64(j*1000/c)})
		}
	}
	return out
}

func TestRatePartitions(t *testing.T) {
	counts := []int{3, 0, 0, 2, 1, 0, 7, 0, 0, 0, 0, 1, 5}
	var text []string
	for _, c := range counts {
		text = append(text, fmt.Sprint(c))
	}
	// Enough seconds to span several prefix blocks.
	for i := 0; i < 3*rateBlock; i++ {
		c := (i * 7) % 5
		counts = append(counts, c)
		text = append(text, fmt.Sprint(c))
	}
	p := write(t, "w.txt", []byte(strings.Join(text, " ")))
	ref := rateRef(counts)
	for _, parts := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprintf("P=%d", parts), func(t *testing.T) {
			src := mustOpen(t, "rate:"+p, Options{Seed: 5, Partitions: parts})
			seen := make([]bool, len(ref))
			all := map[int][]rec{}
			var total uint64
			for part := range parts {
				recs := readN(t, src, part, 0, len(ref)+1)
				all[part] = recs
				total += src.(Sized).PartitionLen(part)
				if uint64(len(recs)) != src.(Sized).PartitionLen(part) {
					t.Fatalf("partition %d: %d records, PartitionLen %d", part, len(recs), src.(Sized).PartitionLen(part))
				}
				for i, r := range recs {
					k := i*parts + part
					if seen[k] {
						t.Fatalf("record %d twice", k)
					}
					seen[k] = true
					if r.Time != ref[k].Time {
						t.Fatalf("partition %d record %d (global %d) at %d ms, want %d", part, i, k, r.Time, ref[k].Time)
					}
				}
				for _, pos := range []int{0, 1, 5, len(recs) / 2, len(recs) - 1, len(recs), len(recs) + 10} {
					got := readN(t, src, part, uint64(pos), 30)
					want := recs[min(pos, len(recs)):min(pos+30, len(recs))]
					equalRecs(t, fmt.Sprintf("partition %d from %d", part, pos), got, want)
				}
			}
			for k, ok := range seen {
				if !ok {
					t.Fatalf("record %d in no partition", k)
				}
			}
			if st := src.(Sized).Stats(); st.Records != uint64(len(ref)) || total != st.Records || st.First != 0 || st.Last != ref[len(ref)-1].Time {
				t.Fatalf("stats %+v, total %d, want %d records, last %d", st, total, len(ref), ref[len(ref)-1].Time)
			}
			// Keys depend on the global index only: the same for every P.
			if parts > 1 {
				one := readN(t, mustOpen(t, "rate:"+p, Options{Seed: 5}), 0, 0, 20)
				for k := range 20 {
					if got := all[k%parts][k/parts]; got != one[k] {
						t.Fatalf("global record %d is %v with P=%d, %v with P=1", k, got, parts, one[k])
					}
				}
			}
		})
	}
}

func TestRateCompressed(t *testing.T) {
	data := []byte("1 2 3 0 4\n5\n")
	tarred := func(inner []byte) []byte {
		var b bytes.Buffer
		w := tar.NewWriter(&b)
		w.WriteHeader(&tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o755})
		w.WriteHeader(&tar.Header{Name: "dir/workload.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(inner))})
		w.Write(inner)
		w.WriteHeader(&tar.Header{Name: "other.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3})
		w.Write([]byte("x y"))
		w.Close()
		return b.Bytes()
	}
	cases := []struct {
		name   string
		file   string
		data   func(t *testing.T) []byte
		format string
	}{
		{"plain", "w.txt", func(t *testing.T) []byte { return data }, "plain"},
		{"gzip", "w.txt.gz", func(t *testing.T) []byte { return gzipped(t, data) }, "gzip"},
		{"gzip, misnamed", "w.txt", func(t *testing.T) []byte { return gzipped(t, data) }, "gzip"},
		{"tar", "w.tar", func(t *testing.T) []byte { return tarred(data) }, "tar"},
		{"tgz", "w.tgz", func(t *testing.T) []byte { return gzipped(t, tarred(data)) }, "gzip tar"},
		{"bzip2", "w.txt.bz2", func(t *testing.T) []byte { return bzipped(t, data) }, "bzip2"},
		{"bzip2, misnamed", "w.dat", func(t *testing.T) []byte { return bzipped(t, data) }, "bzip2"},
		{"tbz2", "w.tbz2", func(t *testing.T) []byte { return bzipped(t, tarred(data)) }, "bzip2 tar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, c.file, c.data(t))
			src := mustOpen(t, "rate:"+p, Options{Partitions: 2})
			rs := src.(*rateSource)
			if rs.format != c.format || fmt.Sprint(rs.counts) != "[1 2 3 0 4 5]" {
				t.Fatalf("format %q counts %v", rs.format, rs.counts)
			}
			if n := len(readN(t, src, 0, 0, 100)) + len(readN(t, src, 1, 0, 100)); n != 15 {
				t.Fatalf("%d records, want 15", n)
			}
		})
	}
	t.Run("error inside a tar names the member", func(t *testing.T) {
		p := write(t, "w.tgz", gzipped(t, tarred([]byte("1 2\n3 oops"))))
		_, err := Open("rate:"+p, Options{})
		wantLineErr(t, err, p+"(dir/workload.txt)", 2, `token 2: "oops"`)
	})
	t.Run("truncated gzip", func(t *testing.T) {
		gz := gzipped(t, bytes.Repeat([]byte("12 "), 10000))
		p := write(t, "w.gz", gz[:len(gz)/2])
		_, err := Open("rate:"+p, Options{})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("truncated gzip: %v", err)
		}
	})
}

func TestSpecErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		spec string
		opt  Options
		want string
	}{
		{"bogus:x", Options{}, `unknown scheme "bogus"`},
		{"nocolon", Options{}, "no scheme"},
		{"gen:sawtooth", Options{}, `unknown generator "sawtooth"`},
		{"gen:diurnal?day=fast", Options{}, `day="fast"`},
		{"gen:diurnal?amp=2", Options{}, `amp="2"`},
		{"gen:diurnal?colour=red", Options{}, `unknown parameter "colour"`},
		{"gen:diurnal?keys=0", Options{}, `keys="0"`},
		{"gen:diurnal?day=1s&day=2s", Options{}, `"day" given 2 times`},
		{"gen:diurnal?%zz", Options{}, "bad query"},
		{"gen:diurnal", Options{Partitions: -1}, "partitions -1"},
		{"gen:diurnal", Options{Partitions: MaxPartitions + 1}, "partitions"},
		{"gen:diurnal", Options{Rate: -1}, "rate -1"},
		{"gen:diurnal", Options{Keys: -5}, "keys -5"},
		{"rate:", Options{}, "no file"},
		{"rate:" + dir + "/missing.txt", Options{}, "no such file"},
		{"rate:" + dir, Options{}, "is a directory"},
		{"rate:x.txt?zipf=no", Options{}, `zipf="no"`},
		{"trace:", Options{}, "no file"},
		{"trace:" + dir + "/missing.csv?time=a&key=b", Options{}, "no such file"},
		{"trace:x.csv?time=a&key=b&sep=colon", Options{}, `sep="colon"`},
	} {
		t.Run(c.spec, func(t *testing.T) {
			_, err := Open(c.spec, c.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line containing %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), c.spec) {
				t.Fatalf("error %q does not name the spec %q", err, c.spec)
			}
		})
	}
	src := mustOpen(t, "gen:constant", Options{Partitions: 2})
	if _, err := src.Open(2, 0); !errors.Is(err, ErrPartition) {
		t.Errorf("Open(2) of 2 partitions: %v", err)
	}
	if _, err := src.Open(-1, 0); !errors.Is(err, ErrPartition) {
		t.Errorf("Open(-1): %v", err)
	}
	if _, err := Open("bogus:x", Options{}); !errors.Is(err, ErrSpec) {
		t.Errorf("unknown scheme: %v does not wrap ErrSpec", err)
	}
}

func TestRealRateTrace(t *testing.T) {
	dir := sharedTraces(t)
	if race.Enabled {
		t.Skip("bzip2 is too slow under -race (5-10 s); run go test without -race")
	}
	src := mustOpen(t, "rate:"+dir+"/nasa_http_1995_per_second.tbz2", Options{Seed: 1, Partitions: 3})
	rs := src.(*rateSource)
	if len(rs.counts) != 5_059_950 {
		t.Errorf("%d seconds, want 5,059,950", len(rs.counts))
	}
	st := rs.Stats()
	if st.Records != 3_461_610 {
		t.Errorf("%d records, want 3,461,610", st.Records)
	}
	var sum uint64
	for p := range 3 {
		sum += rs.PartitionLen(p)
	}
	if sum != 3_461_610 {
		t.Errorf("partitions hold %d records, want 3,461,610", sum)
	}
	if testing.Short() {
		return
	}
	// Read every record of every partition; check order and count.
	var n uint64
	for p := range 3 {
		r, _ := src.Open(p, 0)
		prev := int64(-1)
		for {
			x, ok, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if x.Time < prev {
				t.Fatalf("partition %d: time %d after %d", p, x.Time, prev)
			}
			prev = x.Time
			n++
		}
		if last := readN(t, src, p, rs.PartitionLen(p)-1, 5); len(last) != 1 || last[0].Time > st.Last {
			t.Fatalf("partition %d: last record %v", p, last)
		}
	}
	if n != 3_461_610 {
		t.Errorf("read %d records, want 3,461,610", n)
	}
}

func BenchmarkRateNext(b *testing.B) {
	var text bytes.Buffer
	for i := range 100000 {
		fmt.Fprintf(&text, "%d ", i%17)
	}
	p := write(b, "w.txt", text.Bytes())
	src := mustOpen(b, "rate:"+p, Options{Partitions: 2})
	r, _ := src.Open(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := r.Next(); !ok {
			r, _ = src.Open(0, 0)
		}
	}
}
