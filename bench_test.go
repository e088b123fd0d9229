package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var progressLine = regexp.MustCompile(`^\[(\d+)/(\d+)\] (.+), ETA (\d+h)?(\d+m)?\d+s$`)

// TestBenchProgressJSONAndHTML runs a small throughput benchmark with
// --json and --html: a progress line per round on stderr, the rounds'
// raw values, the configuration and the provenance in the JSON, and a
// page with a dot per round and configuration.
func TestBenchProgressJSONAndHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clusters")
	}
	page := filepath.Join(t.TempDir(), "bench.html")
	code, out, errs := spate(t, "bench", "throughput", "--rounds", "2", "--duration", "1s", "--nodes", "2", "--json", "--html", page)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var ks []int
	for _, line := range strings.Split(strings.TrimSpace(errs), "\n") {
		m := progressLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		k, _ := strconv.Atoi(m[1])
		if m[2] != "2" || !strings.Contains(m[3], "round "+m[1]+" of 2") {
			t.Errorf("progress line %q", line)
		}
		ks = append(ks, k)
	}
	if len(ks) != 2 || ks[0] != 1 || ks[1] != 2 {
		t.Errorf("progress lines for steps %v in %q", ks, errs)
	}
	var res struct {
		Benchmark  string            `json:"benchmark"`
		Config     map[string]string `json:"config"`
		Provenance struct {
			Go      string   `json:"go"`
			OS      string   `json:"os"`
			CPUs    int      `json:"cpus"`
			Args    []string `json:"args"`
			Version string   `json:"version"`
		} `json:"provenance"`
		Cluster []float64 `json:"cluster_rounds"`
		Oracle  []float64 `json:"oracle_rounds"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not the JSON: %v\n%s", err, out)
	}
	p := res.Provenance
	if res.Benchmark != "throughput" || res.Config["rounds"] != "2" || res.Config["duration"] != "1s" || len(res.Cluster) != 2 || len(res.Oracle) != 2 ||
		p.Go == "" || p.OS == "" || p.CPUs < 1 || p.Version == "" || len(p.Args) < 3 || p.Args[1] != "bench" {
		t.Errorf("JSON %+v", res)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `<circle class="round"`); n != 4 {
		t.Errorf("%d dots, want 2 rounds × 2 configurations", n)
	}
	if strings.Contains(string(b), "<script") {
		t.Error("a script in the page")
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the page is not well-formed: %v", err)
		}
	}
}

// TestBenchCtrlCRemovesItsRunDirectories interrupts a benchmark during
// its first run: it stops with exit 130 and leaves no temporary run
// directory behind, unless --keep.
func TestBenchCtrlCRemovesItsRunDirectories(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster")
	}
	for _, keep := range []bool{false, true} {
		t.Run("keep="+strconv.FormatBool(keep), func(t *testing.T) {
			tmp := t.TempDir()
			args := []string{"bench", "throughput", "--rounds", "3", "--duration", "30s", "--nodes", "2"}
			if keep {
				args = append(args, "--keep")
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var all strings.Builder
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				all.WriteString(sc.Text() + "\n")
				if strings.HasPrefix(sc.Text(), "[1/3] ") {
					break
				}
			}
			// Interrupted once its first job runs, the run drains at once;
			// before its nodes have joined, the coordinator would wait 10 s
			// for them first.
			waitFor(t, 60*time.Second, "the first round's job to start", func() (bool, string) {
				m, _ := filepath.Glob(filepath.Join(tmp, "spate-bench-*", "round-1", "events.jsonl"))
				if len(m) != 1 {
					return false, fmt.Sprint(m)
				}
				b, _ := os.ReadFile(m[0])
				return bytes.Contains(b, []byte(`"job_started"`)), fmt.Sprintf("%d bytes of events", len(b))
			})
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(stderr)
			all.Write(rest)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want 130; stderr:\n%s", err, all.String())
			}
			if !strings.Contains(all.String(), "stopped after 0 of 3 runs") {
				t.Errorf("stderr does not say where it stopped:\n%s", all.String())
			}
			left, _ := filepath.Glob(filepath.Join(tmp, "spate-bench-*"))
			if keep != (len(left) == 1) {
				t.Errorf("--keep %v: left %v", keep, left)
			}
			if keep && !strings.Contains(all.String(), "the run directories are kept in "+left[0]) {
				t.Errorf("--keep does not say where:\n%s", all.String())
			}
		})
	}
}
