package tuner

import (
	"bytes"
	"strings"
	"testing"
)

func checkParseErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "in.x:") || strings.Contains(msg, "\n") {
		t.Fatalf("error not one line naming the file: %q", msg)
	}
}

func FuzzParseLANL(f *testing.F) {
	f.Add([]byte(lanlHeader + lanlRow("2", "0", "1/1/2000 0:00", "1/1/2000 1:00", "60") + lanlRow("2", "0", "1/3/2000 0:00", "", "60")))
	f.Add([]byte(lanlHeader + lanlRow("2", "", "12/31/1999 23:59", "1/1/2000 0:00", "")))
	f.Add([]byte("System,nodenum,Prob Started,Prob Fixed,Down Time\n1,1,1/1/2000 0:00,,\n\"unterminated"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseLANL(bytes.NewReader(data), "in.x", "")
		checkParseErr(t, err)
		if err == nil {
			for _, s := range [][]float64{tr.Up, tr.Repair} {
				for _, x := range s {
					if !(x >= lanlFloor) {
						t.Fatalf("duration %v below the floor", x)
					}
				}
			}
			_, _ = FitDurations(tr.Up, nil) // must not panic either
		}
	})
}

func FuzzParseFTA(f *testing.F) {
	f.Add([]byte("# header\n" + ftaRow("0", "1", "1", "0", "100") + ftaRow("1", "1", "0", "100", "150") + ftaRow("2", "1", "1", "150", "900")))
	f.Add([]byte(ftaRow("0", "1", "2", "0", "1")))
	f.Add([]byte("1\t2\t3\t4\t5\t6\t7\t8\t9"))
	f.Add([]byte("\t\t\t\t\t\t\t\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseFTA(bytes.NewReader(data), "in.x")
		checkParseErr(t, err)
		if err == nil {
			for _, s := range [][]float64{tr.Up, tr.UpCensored, tr.Repair} {
				for _, x := range s {
					if !(x > 0) {
						t.Fatalf("duration %v not positive", x)
					}
				}
			}
			_, _ = FitDurations(tr.Up, tr.UpCensored)
		}
	})
}
