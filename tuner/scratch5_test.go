package tuner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestScratchSweep(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	nasa := "rate:../../shared/traces/load/nasa_http_1995_per_second.tbz2"
	var fails []string
	for _, f := range strings.Split(os.Getenv("SWEEP_FAILS"), " ") {
		fails = append(fails, f)
	}
	costs := strings.Split(os.Getenv("SWEEP_COSTS"), " ")
	extra := strings.Fields(os.Getenv("SWEEP_EXTRA"))
	fmt.Println("| failures | ckpt cost | failures seen | fixed-1s | fixed-10s | fixed-60s | young | daly | doci | doci-online | online − best other (pt) | online vs worst fixed |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, f := range fails {
		for _, c := range costs {
			var out, errb bytes.Buffer
			args := append([]string{"--load", nasa, "--scale", "1000", "--failures", f, "--ckpt-base", c, "--json"}, extra...)
			if code := SimMain(args, &out, &errb); code != 0 {
				t.Fatal(errb.String())
			}
			var rep SimReport
			json.Unmarshal(out.Bytes(), &rep)
			row := fmt.Sprintf("| %s | %s | %d |", f, c, rep.Failures)
			best, worst := 0.0, 2.0
			for _, p := range DefaultPolicies {
				e := rep.Efficiency[p]
				row += fmt.Sprintf(" %.3f |", 100*e)
				if p != PolicyOnline {
					best = max(best, e)
				}
				if strings.HasPrefix(p, "fixed-") {
					worst = min(worst, e)
				}
			}
			on := rep.Efficiency[PolicyOnline]
			row += fmt.Sprintf(" %+.3f | %+.1f%% |", 100*(on-best), 100*(on/worst-1))
			fmt.Println(row)
		}
	}
}
