package traces

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShowRecognisesAFailureTrace: a LANL failure CSV or an FTA
// event_trace table is shown as a failure trace, with the --failures
// string to paste, not guessed as a load trace (LANL's Down Time column
// read as epoch seconds: 1970-01-01 to 1970-01-04).
func TestShowRecognisesAFailureTrace(t *testing.T) {
	dir := t.TempDir()
	gz := func(name, text string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(text))
		w.Close()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lanl := gz("lanl.csv.gz", "System,machine type,nodes,nodenum,Prob Started,Prob Fixed,Down Time,Hardware\n"+
		"2,cluster,49,0,6/21/2005 10:54,6/21/2005 11:00,6,Graphics\n2,cluster,49,1,9/6/2005 9:13,9/6/2005 9:19,6,Disk\n")
	fta := gz("fta.tab.gz", "# event_id component_id node_id platform_id node_name event_type event_start_time event_stop_time event_end_reason\n"+
		"    0\t    0\t    0\t    5\tG1/site1/c1/node1\t         0\t   1115811139\t   1116857352\t       NULL\n")
	for _, tc := range []struct{ path, want string }{
		{lanl, "--failures lanl:" + lanl},
		{fta, "--failures fta:" + fta},
	} {
		var out bytes.Buffer
		if err := Show(&out, tc.path); err != nil {
			t.Fatalf("Show %s: %v", tc.path, err)
		}
		s := out.String()
		if !strings.Contains(s, "failure trace") || !strings.Contains(s, tc.want) {
			t.Errorf("Show %s:\n%s\nwant a failure trace and %q", tc.path, s, tc.want)
		}
		if strings.Contains(s, "1970") {
			t.Errorf("Show %s reads a column as epoch time:\n%s", tc.path, s)
		}
	}
	// A scheme given: the same.
	var out bytes.Buffer
	if err := Show(&out, "lanl:"+lanl); err != nil || !strings.Contains(out.String(), "--failures lanl:"+lanl) {
		t.Errorf("Show lanl:%s: %v\n%s", lanl, err, out.String())
	}
}
