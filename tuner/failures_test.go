package tuner

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedTraces is the shared trace directory seen from the package.
const sharedTraces = "../../shared/traces"

func needShared(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(sharedTraces, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present: %v", p, err)
	}
	return p
}

func TestFitDurations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t.Run("weibull", func(t *testing.T) {
		w := Weibull{Shape: 0.5, Scale: 1000}
		xs := make([]float64, 20000)
		for i := range xs {
			xs[i] = w.Sample(r)
		}
		fit, err := FitDurations(xs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !near(fit.Weibull.Shape, 0.5, 0.03) || !near(fit.Weibull.Scale, 1000, 0.06) {
			t.Errorf("fit %v, want shape 0.5 scale 1000", fit.Weibull)
		}
		if _, ok := fit.Best().(Weibull); !ok {
			t.Errorf("Best is %v, want the Weibull", fit.Best())
		}
	})
	t.Run("exponential", func(t *testing.T) {
		xs := make([]float64, 20000)
		for i := range xs {
			xs[i] = 300 * r.ExpFloat64()
		}
		fit, err := FitDurations(xs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !near(fit.Exp.Scale, 300, 0.03) || !near(fit.Weibull.Shape, 1, 0.03) {
			t.Errorf("fit %v / %v, want mean 300, shape 1", fit.Exp, fit.Weibull)
		}
	})
	t.Run("censored", func(t *testing.T) {
		// Weibull(2, 100) lifetimes observed up to 120: a quarter or so censored.
		w := Weibull{Shape: 2, Scale: 100}
		var failed, cens []float64
		for range 20000 {
			x := w.Sample(r)
			if x > 120 {
				cens = append(cens, 120)
			} else {
				failed = append(failed, x)
			}
		}
		fit, err := FitDurations(failed, cens)
		if err != nil {
			t.Fatal(err)
		}
		if !near(fit.Weibull.Shape, 2, 0.05) || !near(fit.Weibull.Scale, 100, 0.03) {
			t.Errorf("fit %v, want shape 2 scale 100", fit.Weibull)
		}
		if fit.Censored != len(cens) {
			t.Errorf("censored %d, want %d", fit.Censored, len(cens))
		}
	})
	for _, tc := range []struct {
		name   string
		failed []float64
	}{
		{"one", []float64{5}},
		{"equal", []float64{5, 5, 5}},
		{"zero", []float64{0, 5}},
		{"negative", []float64{-1, 5}},
		{"NaN", []float64{math.NaN(), 5}},
		{"Inf", []float64{math.Inf(1), 5}},
	} {
		t.Run("error "+tc.name, func(t *testing.T) {
			if _, err := FitDurations(tc.failed, nil); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestOpenFailuresGenerators(t *testing.T) {
	for _, tc := range []struct {
		spec string
		mean float64
	}{
		{"poisson:6h", 6 * 3600},
		{"poisson:3600", 3600},
		{"poisson:73d", 73 * 86400},
		{"weibull:1,30m", 1800},
		{"weibull:0.5,1h", 2 * 3600},
	} {
		f, err := OpenFailures(tc.spec)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if !near(f.TBF.Mean(), tc.mean, 1e-9) {
			t.Errorf("%s: mean %v, want %v", tc.spec, f.TBF.Mean(), tc.mean)
		}
		if f.Describe() == "" || strings.Contains(f.Describe(), "\n") {
			t.Errorf("%s: Describe %q", tc.spec, f.Describe())
		}
	}
	for _, spec := range []string{
		"", "poisson", "poisson:", "poisson:-1h", "poisson:0", "poisson:abc", "poisson:NaN",
		"weibull:1", "weibull:x,1h", "weibull:0,1h", "weibull:1,-1h", "weibull:100,1h",
		"exp:1h", "lanl:", "fta:", "lanl:/nonexistent?fit=bad", "lanl:x?speedup=0", "lanl:x?bogus=1", "fta:x?system=2",
	} {
		_, err := OpenFailures(spec)
		if err == nil {
			t.Errorf("%q: no error", spec)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error is not one line: %q", spec, err)
		}
	}
}

func TestTimes(t *testing.T) {
	f, err := OpenFailures("poisson:100")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Times(7, 3, 1e6)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Times(7, 3, 1e6)
	c, _ := f.Times(7, 4, 1e6)
	if len(a) == 0 || len(a) != len(b) || a[0] != b[0] || a[len(a)-1] != b[len(b)-1] {
		t.Fatal("Times is not deterministic")
	}
	if len(c) > 0 && c[0] == a[0] {
		t.Error("two units share their failure times")
	}
	for i, x := range a {
		if x < 0 || x >= 1e6 || (i > 0 && x < a[i-1]) {
			t.Fatalf("time %d = %v out of order or range", i, x)
		}
	}
	if n := float64(len(a)); math.Abs(n-1e4) > 5*math.Sqrt(1e4) {
		t.Errorf("%v failures in 1e6 s at MTBF 100 s, want about 1e4", n)
	}
	defer func(n int) { maxFailures = n }(maxFailures)
	maxFailures = 1000
	if _, err := f.Times(1, 0, 1e6); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("too many failures: %v", err)
	}
}

func writeTemp(t *testing.T, name, content string, gz bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	data := []byte(content)
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const lanlHeader = "System,machine type,nodes,procstot,procsinnode,nodenum,nodenumz,node install,node prod,node decom,fru type,mem,cputype,memtype,num intercon,purpose,Prob Started,Prob Fixed,Down Time,Facilities,Hardware,Human Error,Network,Undetermined,Software,Same Event\n"

func lanlRow(sys, node, start, fixed, down string) string {
	return sys + ",cluster,4,16,4," + node + "," + node + ",,,,part,8,1,1,1,compute," + start + "," + fixed + "," + down + ",,,,,,\"MPI, PVM\",No\n"
}

func TestParseLANL(t *testing.T) {
	content := lanlHeader +
		lanlRow("2", "0", "1/1/2000 0:00", "1/1/2000 1:00", "60") +
		lanlRow("2", "0", "1/2/2000 1:00", "1/2/2000 1:30", "30") +
		lanlRow("2", "0", "1/2/2000 1:10", "1/2/2000 2:00", "50") + // during the previous outage: merged
		lanlRow("2", "0", "1/4/2000 2:00", "", "10") + // no Prob Fixed: Down Time
		lanlRow("2", "1", "1/1/2000 0:00", "1/1/2000 0:00", "0") +
		lanlRow("2", "1", "1/1/2000 12:00", "1/1/2000 12:00", "0") +
		lanlRow("2", "", "1/1/2000 12:00", "1/1/2000 12:00", "0") + // no node: skipped
		lanlRow("3", "0", "1/1/2000 12:00", "1/1/2000 13:00", "60")
	for _, gz := range []bool{false, true} {
		p := writeTemp(t, "lanl.csv", content, gz)
		f, err := OpenFailures("lanl:" + p + "?system=2")
		if err != nil {
			t.Fatal(err)
		}
		if f.Trace.Failures() != 3 || f.Fit == nil || f.Fit.Failures != 3 {
			t.Errorf("gz %v: %s", gz, f.Describe())
		}
		tr, err := ParseLANL(strings.NewReader(content), "x.csv", "2")
		if err != nil {
			t.Fatal(err)
		}
		wantUp := []float64{86400, 2 * 86400, 12 * 3600}
		if !slicesNear(tr.Up, wantUp) {
			t.Errorf("gz %v: up %v, want %v", gz, tr.Up, wantUp)
		}
		wantRepair := []float64{3600, 3600, 600, 30, 30}
		if !slicesNear(tr.Repair, wantRepair) {
			t.Errorf("repair %v, want %v", tr.Repair, wantRepair)
		}
		if tr.Nodes != 2 || tr.Skipped != 1 || tr.Merged != 1 || tr.Records != 7 {
			t.Errorf("nodes %d skipped %d merged %d records %d", tr.Nodes, tr.Skipped, tr.Merged, tr.Records)
		}
	}
}

func slicesNear(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i], 1e-9) {
			return false
		}
	}
	return true
}

func TestParseLANLErrors(t *testing.T) {
	good := lanlRow("2", "0", "1/1/2000 0:00", "1/1/2000 1:00", "60")
	for _, tc := range []struct {
		name, content, want string
	}{
		{"empty", "", "lanl.csv: empty file"},
		{"no column", "System,nodenumz,Prob Started,Down Time\n", "lanl.csv:1: no column \"Prob Fixed\""},
		{"bad start", lanlHeader + good + lanlRow("2", "0", "13/1/2000 0:00", "", "1"), "lanl.csv:3: Prob Started \"13/1/2000 0:00\""},
		{"bad fixed", lanlHeader + lanlRow("2", "0", "1/1/2000 0:00", "yesterday", "1"), "lanl.csv:2: Prob Fixed \"yesterday\""},
		{"fixed before", lanlHeader + lanlRow("2", "0", "1/2/2000 0:00", "1/1/2000 0:00", "1"), "lanl.csv:2: Prob Fixed 1/1/2000 0:00 is before"},
		{"bad down", lanlHeader + lanlRow("2", "0", "1/2/2000 0:00", "", "-5"), "lanl.csv:2: Down Time \"-5\""},
		{"fields", lanlHeader + good + "2,cluster\n", "lanl.csv:3: wrong number of fields"},
		{"quote", lanlHeader + good + good[:20] + "\"x\"y" + good[20:], "lanl.csv:3: column"},
		{"no records", lanlHeader, "lanl.csv: no failure records"},
		{"feb 30", lanlHeader + lanlRow("2", "0", "2/30/2000 0:00", "", "1"), "lanl.csv:2: Prob Started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTemp(t, "lanl.csv", tc.content, tc.name == "bad start")
			_, err := OpenFailures("lanl:" + p)
			if err == nil {
				t.Fatal("no error")
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(p)+"/", "")
			if !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want prefix %q", msg, tc.want)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v does not wrap ErrMalformed", err)
			}
		})
	}
	_, err := ParseLANL(strings.NewReader(lanlHeader+good), "x", "99")
	if err == nil || !strings.Contains(err.Error(), "no records of system \"99\"") {
		t.Errorf("unknown system: %v", err)
	}
}

func ftaRow(id, node, typ, start, stop string) string {
	return "  " + id + "\t    0\t  " + node + "\t    5\tG1/site1/c1/node" + node + "\t         " + typ + "\t   " + start + "\t   " + stop + "\t       NULL\n"
}

func TestParseFTA(t *testing.T) {
	content := "# event_id component_id node_id platform_id node_name event_type event_start_time event_stop_time event_end_reason\n" +
		ftaRow("0", "1", "0", "1000", "2000") + // down at the start: not a failure
		ftaRow("1", "1", "1", "2000", "5000") + // up 3000, then a failure
		ftaRow("2", "1", "0", "5000", "5600") + // repair 600
		ftaRow("3", "1", "1", "5600", "6000") + // up, merged with the next
		ftaRow("4", "1", "1", "6000", "9600") + // up 4000 in all, then a failure
		ftaRow("5", "1", "0", "9600", "9700") + // down at the end: not a repair
		"\n" +
		ftaRow("6", "2", "1", "0", "100") + // up, then a gap: censored
		ftaRow("7", "2", "0", "500", "600") +
		ftaRow("8", "2", "1", "600", "700") // last: censored
	for _, gz := range []bool{false, true} {
		p := writeTemp(t, "fta.tab", content, gz)
		tr, err := ParseFTA(mustOpen(t, p), p)
		if err != nil {
			t.Fatal(err)
		}
		if !slicesNear(tr.Up, []float64{3000, 4000}) || !slicesNear(tr.UpCensored, []float64{100, 100}) || !slicesNear(tr.Repair, []float64{600}) {
			t.Errorf("gz %v: up %v censored %v repair %v", gz, tr.Up, tr.UpCensored, tr.Repair)
		}
		if tr.Nodes != 1 || tr.Records != 9 {
			t.Errorf("nodes %d records %d", tr.Nodes, tr.Records)
		}
	}
}

func mustOpen(t *testing.T, p string) *bytes.Reader {
	t.Helper()
	r, c, err := openFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b.Bytes())
}

func TestParseFTAErrors(t *testing.T) {
	good := ftaRow("0", "1", "1", "0", "100")
	for _, tc := range []struct {
		name, content, want string
	}{
		{"empty", "# header\n\n", "fta.tab: no event rows"},
		{"fields", good + "1\t2\t3\n", "fta.tab:2: 3 tab-separated fields, want 9"},
		{"too many", good + strings.TrimSuffix(good, "\n") + "\textra\n", "fta.tab:2: 10 tab-separated fields"},
		{"type", ftaRow("0", "1", "2", "0", "1"), "fta.tab:1: event_type \"2\""},
		{"node", ftaRow("0", "x", "1", "0", "1"), "fta.tab:1: node_id \"x\""},
		{"start", ftaRow("0", "1", "1", "-5", "1"), "fta.tab:1: event_start_time \"-5\""},
		{"order", good + ftaRow("1", "1", "0", "200", "100"), "fta.tab:2: event_stop_time 100 is before event_start_time 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTemp(t, "fta.tab", tc.content, false)
			_, err := OpenFailures("fta:" + p)
			if err == nil {
				t.Fatal("no error")
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(p)+"/", "")
			if !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want prefix %q", msg, tc.want)
			}
		})
	}
	if _, err := OpenFailures("fta:/nonexistent/fta.tab"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing file: %v", err)
	}
}

func TestSharedLANL(t *testing.T) {
	p := needShared(t, "failure/LA-UR-05-7318-failure-data-1996-2005.csv.gz")
	f, err := OpenFailures("lanl:" + p)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := f.TBF.(Weibull)
	if !ok {
		t.Fatalf("best fit %v, want a Weibull", f.TBF)
	}
	// Per-node times between failures: shape ≈ 0.47, mean ≈ 74 days.
	if w.Shape < 0.4 || w.Shape > 0.55 || f.MTBF().Hours()/24 < 60 || f.MTBF().Hours()/24 > 90 {
		t.Errorf("fit %v, MTBF %v", w, f.MTBF())
	}
	if f.Trace.Records != 23739 || f.Trace.Skipped != 126 {
		t.Errorf("records %d skipped %d, want 23739 and 126", f.Trace.Records, f.Trace.Skipped)
	}
	g, err := OpenFailures("lanl:" + p + "?speedup=100&fit=exp")
	if err != nil {
		t.Fatal(err)
	}
	if !near(g.MTBF().Seconds(), f.Fit.Exp.Scale/100, 1e-9) {
		t.Errorf("speedup: MTBF %v, want %v", g.MTBF(), f.Fit.Exp.Scale/100)
	}
}

func TestSharedFTA(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 55 MB")
	}
	p := needShared(t, "failure/fta_grid5000_event_trace.tab.gz")
	f, err := OpenFailures("fta:" + p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Trace.Records != 588463 || f.Trace.Nodes < 1200 || f.Trace.Nodes > 1288 {
		t.Errorf("records %d nodes %d", f.Trace.Records, f.Trace.Nodes)
	}
	if h := f.MTBF().Hours(); h < 20 || h > 40 {
		t.Errorf("MTBF %v, want about 31 h", f.MTBF())
	}
}
