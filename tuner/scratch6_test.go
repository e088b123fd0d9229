package tuner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func TestScratchSeeds(t *testing.T) {
	if os.Getenv("SEEDS") == "" {
		t.Skip()
	}
	nasa := "rate:../../shared/traces/load/nasa_http_1995_per_second.tbz2"
	for _, f := range strings.Fields(os.Getenv("SEEDS")) {
		diffs := map[string][]float64{}
		wins := map[string]int{}
		nf := 0
		for s := 1; s <= 20; s++ {
			var out, errb bytes.Buffer
			args := []string{"--load", nasa, "--scale", "1000", "--failures", f, "--json", "--seed", fmt.Sprint(s), "--policies", "fixed-60s,young,daly,doci,doci-online"}
			if code := SimMain(args, &out, &errb); code != 0 {
				t.Fatal(errb.String())
			}
			var rep SimReport
			json.Unmarshal(out.Bytes(), &rep)
			nf += rep.Failures
			for p, g := range rep.GainPoints {
				diffs[p] = append(diffs[p], g)
				if g > 0 {
					wins[p]++
				}
			}
		}
		fmt.Printf("%s: mean failures %.1f\n", f, float64(nf)/20)
		for _, p := range []string{"fixed-60s", "young", "daly", "doci"} {
			d := diffs[p]
			var m, v float64
			for _, x := range d {
				m += x
			}
			m /= float64(len(d))
			for _, x := range d {
				v += (x - m) * (x - m)
			}
			sd := math.Sqrt(v / float64(len(d)-1))
			fmt.Printf("  vs %-10s mean %+.4f pt  sd %.4f  se %.4f  wins %d/20\n", p, m, sd, sd/math.Sqrt(20), wins[p])
		}
	}
}
