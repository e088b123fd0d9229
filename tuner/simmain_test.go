package tuner

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"spate/internal/race"
	"strings"
	"testing"
	"time"
)

var smallArgs = []string{"--load", "gen:diurnal?day=1h", "--duration", "6h", "--failures", "weibull:0.5,10m", "--instances", "4", "--keys", "1000"}

func runSim(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := SimMain(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestSimMainJSON(t *testing.T) {
	out, errs, code := runSim(t, append(smallArgs, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep SimReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, p := range DefaultPolicies {
		e, ok := rep.Efficiency[p]
		if !ok || !(e > 0 && e <= 1) {
			t.Errorf("efficiency[%s] = %v, %v", p, e, ok)
		}
		w := rep.Waste[p]
		for _, k := range []string{"checkpoint", "lost_work", "replay", "downtime"} {
			if _, ok := w[k]; !ok {
				t.Errorf("waste[%s] has no %s", p, k)
			}
		}
		if sum := w["checkpoint"] + w["lost_work"] + w["replay"] + w["downtime"]; !near(sum, 1-e, 1e-9) {
			t.Errorf("%s: waste %v does not add up to 1 - efficiency %v", p, sum, 1-e)
		}
		if _, ok := rep.Gain[p]; ok != (p != PolicyOnline) {
			t.Errorf("gain[%s] present: %v", p, ok)
		}
	}
	if rep.Failures == 0 || rep.Seconds != 6*3600 {
		t.Errorf("failures %d seconds %d", rep.Failures, rep.Seconds)
	}
	// The same seed gives the same bytes; another seed does not.
	again, _, _ := runSim(t, append(smallArgs, "--json")...)
	if again != out {
		t.Error("output differs between two runs with one seed")
	}
	other, _, _ := runSim(t, append(smallArgs, "--json", "--seed", "2")...)
	if other == out {
		t.Error("seed 2 gave the output of seed 1")
	}
}

func TestSimMainTable(t *testing.T) {
	out, errs, code := runSim(t, smallArgs...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range append(DefaultPolicies, "efficiency", "lost work", "doci-online gain", "failures") {
		if !strings.Contains(out, want) {
			t.Errorf("table has no %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "simulated in") {
		t.Errorf("stderr %q", errs)
	}
}

func TestSimMainPlot(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sim.svg")
	if _, errs, code := runSim(t, append(smallArgs, "--plot", p)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	var root string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	for _, want := range []string{"doci-online", "fixed-1s", "checkpoint interval", "<path"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("plot has no %q", want)
		}
	}
	if _, errs, code := runSim(t, append(smallArgs, "--plot", filepath.Join(t.TempDir(), "no", "dir.svg"))...); code != 2 || strings.Count(errs, "\n") != 1 {
		t.Errorf("unwritable plot: exit %d, %q", code, errs)
	}
}

func TestSimMainErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"load", []string{"--load", "nope:x"}, "nope:x"},
		{"failures", []string{"--failures", "poisson:-1"}, "poisson:-1"},
		{"failure file", []string{"--failures", "lanl:/nonexistent.csv"}, "nonexistent"},
		{"policy", []string{"--policies", "young,doci-online,wild"}, "unknown policy \"wild\""},
		{"no online", []string{"--policies", "young"}, "must include doci-online"},
		{"util", []string{"--util", "0"}, "--util"},
		{"scale", []string{"--scale", "0"}, "--scale 0"},
		{"instances", []string{"--instances", "0"}, "instances 0"},
		{"capacity", []string{"--capacity", "-5"}, "capacity"},
		{"arg", []string{"extra"}, "unexpected argument"},
		{"bounds", []string{"--min", "1h", "--max", "1s"}, "interval bounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, smallArgs...), tc.args...)
			_, errs, code := runSim(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			if !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "spate tuner sim: ") {
				t.Errorf("stderr %q, want one line with %q", errs, tc.want)
			}
		})
	}
	if _, _, code := runSim(t, "--no-such-flag"); code != 2 {
		t.Errorf("unknown flag: exit %d", code)
	}
	if _, _, code := runSim(t, "--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
}

// The two months of the NASA trace with the LANL failures: the headline
// scenario of MODEL.md, which must replay in seconds.
func TestSimMainNASA(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 5M seconds")
	}
	if race.Enabled {
		t.Skip("too slow under -race (bzip2 alone takes 5-10 s)")
	}
	nasa := needShared(t, "load/nasa_http_1995_per_second.tbz2")
	lanl := needShared(t, "failure/LA-UR-05-7318-failure-data-1996-2005.csv.gz")
	start := time.Now()
	out, errs, code := runSim(t, "--load", "rate:"+nasa, "--failures", "lanl:"+lanl, "--scale", "1000", "--json")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep SimReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Seconds != 5_059_950 {
		t.Errorf("%d seconds, want 5,059,950", rep.Seconds)
	}
	t.Logf("NASA x LANL: %v; %s", took, strings.TrimSpace(errs))
	for _, p := range DefaultPolicies {
		t.Logf("%-12s %.4f%%", p, 100*rep.Efficiency[p])
	}
	if took > 30*time.Second {
		t.Errorf("took %v, want well under 30 s", took)
	}
}

func TestFormatting(t *testing.T) {
	for s, want := range map[float64]string{0: "0s", 2e-6: "2µs", 0.1: "100ms", 42: "42s", 1140: "19m", 3 * 3600: "3h", 74 * 86400: "74d"} {
		if got := fmtSec(s); got != want {
			t.Errorf("fmtSec(%v) = %q, want %q", s, got, want)
		}
	}
	if got := fmtCount(5059950); got != "5,059,950" {
		t.Errorf("fmtCount = %q", got)
	}
}
