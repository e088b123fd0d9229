package coord

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"spate/job"
	"spate/wire"
)

var updateScripts = flag.Bool("update-scripts", false, "rewrite coord/testdata/ledger/*.golden from the scripts")

// TestLedgerScripts runs the scenario scripts of coord/testdata/ledger
// against the restore bookkeeping (ledger.go, the manifest): each line a
// step, each step's resulting state printed, the whole compared with the
// script's .golden file (regenerated with -update-scripts). Steps:
//
//	checkpoint INST gen=G id=N [full] [parent=P] [sink=LEN]   a complete checkpoint
//	restore INST gen=G from=N [pinned=ID,...]                 generation G reports it restored N (0: none)
//	collect INST                                              the manifest's garbage collection
//	compacted INST id=N                                       the chain up to N is folded into INST/cN-compacted
//	damaged INST FILE                                         a scrub found FILE damaged
//	# ...                                                     a comment, echoed
func TestLedgerScripts(t *testing.T) {
	runScripts(t, "ledger", func(_ *testing.T, script string) (string, error) { return runLedgerScript(script) })
}

// runScripts runs every script of testdata/DIR through run and compares
// each transcript with the script's .golden file (-update-scripts
// rewrites them).
func runScripts(t *testing.T, dir string, run func(*testing.T, string) (string, error)) {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/%s (%v)", dir, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(t, string(b))
			if err != nil {
				t.Fatalf("%s:%v", f, err)
			}
			golden := strings.TrimSuffix(f, ".txt") + ".golden"
			if *updateScripts {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-scripts to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("%s: the transcript differs from %s (-update-scripts rewrites it after a check):\n--- got\n%s\n--- want\n%s", f, golden, got, want)
			}
		})
	}
}

// runLedgerScript runs a script and returns the transcript.
func runLedgerScript(script string) (string, error) {
	m := newManifest("run", "windowcount")
	o := OutputManifest{Limits: map[string]int64{}}
	var out strings.Builder
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		fmt.Fprintf(&out, "> %s\n", line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		words := strings.Fields(line)
		if len(words) < 2 {
			return "", fmt.Errorf("%d: want VERB INSTANCE ...", n+1)
		}
		verb, inst := words[0], job.InstanceID(words[1])
		args := map[string]string{}
		for _, w := range words[2:] {
			k, v, _ := strings.Cut(w, "=")
			args[k] = v
		}
		num := func(k string) uint64 {
			v, _ := strconv.ParseUint(args[k], 10, 64)
			return v
		}
		op, index := splitInstance(inst)
		switch verb {
		case "checkpoint":
			_, full := args["full"]
			cp := wire.Checkpoint{Instance: inst, Gen: num("gen"), ID: num("id"), Full: full, Parent: num("parent")}
			kind := "delta"
			if full {
				kind = "full"
			}
			cp.File = fmt.Sprintf("%s/g%d-c%d-%s", inst, cp.Gen, cp.ID, kind)
			if v, ok := args["sink"]; ok {
				cp.SinkFile = SinkFileName(op, index, cp.Gen)
				cp.SinkLen, _ = strconv.ParseInt(v, 10, 64)
			}
			m.add(cp)
		case "restore":
			gen, from := num("gen"), num("from")
			var pinned []uint64
			for _, p := range strings.Split(args["pinned"], ",") {
				if v, err := strconv.ParseUint(p, 10, 64); err == nil {
					pinned = append(pinned, v)
				}
			}
			var cp *wire.Checkpoint
			if got, ok := m.byID[inst][from]; ok && from > 0 {
				cp = &got
			}
			if gone := m.restoredAt(inst, from, pinned...); len(gone) > 0 {
				fmt.Fprintf(&out, "forgotten %v\n", gone)
			}
			if op == "sink" {
				o.restoreSink(op, index, gen, cp)
			}
		case "collect":
			fmt.Fprintf(&out, "deleted %v\n", m.collect(inst))
		case "compacted":
			if !m.compacted(inst, num("id"), fmt.Sprintf("%s/c%d-compacted", inst, num("id"))) {
				return "", fmt.Errorf("%d: no checkpoint %d of %s", n+1, num("id"), inst)
			}
		case "damaged":
			if len(words) != 3 {
				return "", fmt.Errorf("%d: want damaged INSTANCE FILE", n+1)
			}
			fmt.Fprintf(&out, "forgotten %v\n", m.damaged(inst, words[2]))
		default:
			return "", fmt.Errorf("%d: unknown step %q", n+1, verb)
		}
		chains, cps := m.restorable(inst)
		var ids []uint64
		for _, c := range cps {
			ids = append(ids, c.ID)
		}
		fmt.Fprintf(&out, "restorable %v: latest %v, fallback %v; next id %d\n", ids, chainOf(chains, 0), chainOf(chains, 1), m.nextID(inst))
		if len(o.Limits) > 0 {
			var ls []string
			for f, n := range o.Limits {
				ls = append(ls, fmt.Sprintf("%s=%d", f, n))
			}
			sort.Strings(ls)
			fmt.Fprintf(&out, "limits %s\n", strings.Join(ls, " "))
		}
	}
	return out.String(), nil
}

func chainOf(chains [][]string, i int) []string {
	if i < len(chains) {
		return chains[i]
	}
	return nil
}

func splitInstance(id job.InstanceID) (string, int) {
	op, n, _ := strings.Cut(string(id), "#")
	i, _ := strconv.Atoi(n)
	return op, i
}
