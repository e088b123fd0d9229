package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"spate/chaos"
	"spate/control"
)

// spate runs the command line in process.
func spate(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main("test", args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// commandPaths are the words of every visible command, root first.
func commandPaths() [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		out = append(out, path)
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				walk(s, append(slices.Clone(path), s.Name()))
			}
		}
	}
	walk(newRoot("test", &bytes.Buffer{}, &bytes.Buffer{}), nil)
	return out
}

func TestEveryCommandAnswersHelpOnStdout(t *testing.T) {
	paths := commandPaths()
	// The contract's commands, and all five benchmarks, are among them.
	have := map[string]bool{}
	for _, p := range paths {
		have[strings.Join(p, " ")] = true
	}
	for _, want := range []string{"up", "verify", "status", "chaos run", "chaos kill", "chaos heal", "scale", "bench throughput",
		"bench overhead", "bench recovery", "bench scaling", "bench tuner", "tuner sim", "traces show", "version", "completion", "man"} {
		if !have[want] {
			t.Errorf("no command %q", want)
		}
	}
	for _, p := range paths {
		for _, args := range [][]string{append(slices.Clone(p), "--help"), append(slices.Clone(p), "-h"), append([]string{"help"}, p...)} {
			name := strings.Join(args, " ")
			t.Run(name, func(t *testing.T) {
				code, out, errOut := spate(args...)
				if code != 0 || errOut != "" {
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				for _, want := range []string{"Usage:", "Examples:"} {
					if !strings.Contains(out, want) {
						t.Errorf("no %q in\n%s", want, out)
					}
				}
				if len(p) > 0 && p[0] != "help" && !strings.Contains(out, "spate "+strings.Join(p, " ")) {
					t.Errorf("no synopsis of spate %s in\n%s", strings.Join(p, " "), out)
				}
				if strings.Contains(out, "`") {
					t.Errorf("a backquote in the help:\n%s", out)
				}
			})
		}
	}
}

func TestTopLevelUsageListsEveryCommand(t *testing.T) {
	_, out, _ := spate("--help")
	for _, want := range []string{"up", "verify", "status", "chaos run", "scale", "throughput, overhead, recovery, resume, scaling, tuner",
		"tuner sim", "traces show", "version", "completion", "man"} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\n  node ") {
		t.Errorf("the hidden node command shows:\n%s", out)
	}
}

func TestMistakesAreOneLineAndExit2(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"close command", []string{"verfy"}, "did you mean verify?"},
		{"unknown chaos verb", []string{"chaos", "kil", "n2"}, "did you mean kill?"},
		{"unknown benchmark", []string{"bench", "recovry"}, "did you mean recovery?"},
		{"unknown help topic", []string{"help", "upp"}, "did you mean up?"},
		{"unknown flag of up", []string{"up", "--nodez", "3"}, "unknown flag --nodez: did you mean --nodes?"},
		{"single-dash unknown flag", []string{"up", "-nodez", "3"}, "nodez"},
		{"bad value of up", []string{"up", "--nodes", "many"}, `--nodes "many": want a whole number`},
		{"up validation", []string{"up", "--ft", "maybe"}, `--ft: "maybe": want spate, global or none`},
		{"argument to up", []string{"up", "extra"}, `unexpected argument "extra"`},
		{"bad --show", []string{"up", "--show", "chekpoint"}, "did you mean checkpoint?"},
		{"quiet and show", []string{"up", "--quiet", "--show", "checkpoint"}, "choose one"},
		{"bad --events kind", []string{"up", "--events", "chekpoint"}, "did you mean checkpoint? (a file of that name: --events ./chekpoint)"},
		{"bad kind in --events", []string{"up", "--events", "checkpoint,recovery_don"}, `"recovery_don" is not an event kind: did you mean recovery_done?`},
		{"--events kinds and --show", []string{"up", "--events", "checkpoint", "--show", "trim"}, "choose one"},
		{"quiet and --events kinds", []string{"up", "--quiet", "--events=node_lost"}, "choose one"},
		{"unknown flag of status", []string{"status", "--jsn"}, "did you mean --json?"},
		{"argument to status", []string{"status", "now"}, `unexpected argument "now"`},
		{"missing value", []string{"status", "--data"}, "--data needs a value"},
		{"unknown chaos key", []string{"chaos", "link", "n2", "latncy=5ms"}, "did you mean latency?"},
		{"for on kill", []string{"chaos", "kill", "n2", "--for", "1s"}, "unknown flag --for"},
		{"two targets", []string{"chaos", "kill", "n1", "n2"}, "one target only"},
		{"missing target", []string{"chaos", "kill"}, "missing TARGET"},
		{"scale needs two words", []string{"scale", "count"}, "want OP N"},
		{"unknown flag of a benchmark", []string{"bench", "recovery", "--round", "3"}, "did you mean --rounds?"},
		{"bad value of a benchmark", []string{"bench", "throughput", "--rounds=x"}, `--rounds "x": want a whole number`},
		{"unknown flag of tuner sim", []string{"tuner", "sim", "--lod", "gen:diurnal"}, "did you mean --load?"},
		{"chaos run without a file", []string{"chaos", "run"}, "missing FILE.yaml"},
		{"chaos run bad --set", []string{"chaos", "run", "x.yaml", "--set", "nodes"}, "want KEY=VALUE"},
		{"unknown shell", []string{"completion", "tcsh"}, `unknown shell "tcsh"`},
		{"group without a command", []string{"chaos"}, "missing command"},
		{"traces show without a file", []string{"traces", "show"}, "want one FILE"},
		{"verify without a run", []string{"verify", "--data", t.TempDir()}, "run.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := spate(tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %q %q", code, out, errOut)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q: want one line with %q", errOut, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		if code, out, _ := spate(args...); code != 0 || out != "spate test\n" {
			t.Errorf("%v: exit %d %q", args, code, out)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "complete -o default -F __start_spate spate", "zsh": "#compdef spate", "fish": "complete -c spate"} {
		code, out, errOut := spate("completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, marker) {
			t.Errorf("%s: exit %d, %q, no %q in %d bytes", shell, code, errOut, marker, len(out))
		}
	}
}

// complete asks for completions as the shell scripts do.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := spate(append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d %s", args, code, errOut)
	}
	var words []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, ":") {
			w, _, _ := strings.Cut(l, "\t")
			words = append(words, w)
		}
	}
	return words
}

// fakeRun serves a fixed status as a running cluster's control API in a
// run directory.
func fakeRun(t *testing.T) string {
	dir, _ := fakeRunWith(t)
	return dir
}

func fakeRunWith(t *testing.T) (string, *control.Fake) {
	t.Helper()
	f := control.NewFake(control.Status{Run: "r1", Nodes: []control.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}},
		Instances: []control.Instance{{ID: "count#0", Op: "count", Node: "n1", KeyGroups: []int{0, 1}}, {ID: "count#1", Op: "count", Node: "n2", KeyGroups: []int{2}},
			{ID: "rollup#0", Op: "rollup", Node: "n2", KeyGroups: []int{0, 1, 2}}, {ID: "source#0", Op: "source", Node: "n1"},
			{ID: "sink#1", Op: "sink", Node: "n3", KeyGroups: []int{0, 1, 2}}}})
	srv, err := control.Listen("127.0.0.1:0", "secret", f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, control.AddrFile), []byte(srv.Addr()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, f
}

func TestCompletionNamesTheRunningClustersNodesAndInstances(t *testing.T) {
	dir := fakeRun(t)
	got := complete(t, "chaos", "kill", "--data", dir, "")
	for _, want := range []string{"n1", "n2", "n3", "count#0", "sink#1", "one", "majority"} {
		if !slices.Contains(got, want) {
			t.Errorf("chaos kill completions %q lack %s", got, want)
		}
	}
	if got := complete(t, "chaos", "pause", "--data", dir, "n"); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("chaos pause n<TAB>: %q", got)
	}
	// No cluster: no node names, and no error.
	got = complete(t, "chaos", "kill", "--data", t.TempDir(), "n")
	if len(got) != 0 {
		t.Errorf("without a cluster: %q", got)
	}
	if got := complete(t, "up", "--f"); !slices.Contains(got, "--ft") || !slices.Contains(got, "--failures") {
		t.Errorf("up --f<TAB>: %q", got)
	}
	if got := complete(t, "up", "--ft", ""); !slices.Equal(got, []string{"spate", "global", "none"}) {
		t.Errorf("up --ft <TAB>: %q", got)
	}
	if got := complete(t, "bench", ""); !slices.Contains(got, "recovery") {
		t.Errorf("bench <TAB>: %q", got)
	}
	if got := complete(t, "scale", ""); !slices.Equal(got, []string{"count", "rollup"}) {
		t.Errorf("scale <TAB>: %q", got)
	}
	// From the running cluster: its keyed operators, N around their
	// parallelism, and KEY= values (peer= its nodes).
	if got := complete(t, "scale", "--data", dir, ""); !slices.Equal(got, []string{"count", "rollup"}) {
		t.Errorf("scale <TAB> on the cluster: %q", got)
	}
	if got := complete(t, "scale", "count", "--data", dir, ""); !slices.Equal(got, []string{"3", "4", "1"}) {
		t.Errorf("scale count <TAB> (2 instances): %q", got)
	}
	if got := complete(t, "chaos", "link", "n1", "--data", dir, "peer="); !slices.Equal(got, []string{"peer=n1", "peer=n2", "peer=n3"}) {
		t.Errorf("chaos link n1 peer=<TAB>: %q", got)
	}
	if got := complete(t, "chaos", "partition", "--data", dir, "shape=m"); !slices.Equal(got, []string{"shape=majority"}) {
		t.Errorf("chaos partition shape=m<TAB>: %q", got)
	}
}

func TestActSendsTheActionToTheCluster(t *testing.T) {
	dir, f := fakeRunWith(t)
	code, _, errOut := spate("chaos", "link", "n2", "latency=50ms", "--jitter", "10ms", "-for", "5s", "--data", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := spate("scale", "count", "4", "--data", dir); code != 0 {
		t.Fatalf("scale: exit %d: %s", code, errOut)
	}
	var got []string
	for _, a := range f.Actions() {
		got = append(got, a.String())
	}
	if want := []string{"link n2 for=5s jitter=10ms latency=50ms", "scale count n=4"}; !slices.Equal(got, want) {
		t.Errorf("actions %q, want %q", got, want)
	}
	code, out, errOut := spate("status", "--data", dir)
	if code != 0 || !strings.Contains(out, "count#0") || errOut != "" {
		t.Fatalf("status: exit %d %q %q", code, out, errOut)
	}
}

func TestManPage(t *testing.T) {
	code, out, errOut := spate("man")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d %s", code, errOut)
	}
	for _, want := range []string{".TH SPATE 1", ".SH NAME", ".SS chaos run", ".SS bench recovery", `\-\-nodes`, `\-\-junit`, ".SH EXIT STATUS"} {
		if !strings.Contains(out, want) {
			t.Errorf("man page lacks %q", want)
		}
	}
	dir := filepath.Join(t.TempDir(), "man1")
	if code, _, errOut := spate("man", "--dir", dir); code != 0 {
		t.Fatalf("man --dir: exit %d %s", code, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "spate.1"))
	if err != nil || string(b) != out {
		t.Errorf("spate.1: %v, %d bytes, want %d", err, len(b), len(out))
	}
}

func TestGoFlagsAreReadFromTheEnginesListing(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("n", 3, "a short one")
	fs.Bool("verbose", false, "talk")
	fs.Bool("on", true, "on by default")
	fs.Duration("every", time.Second, "how often")
	fs.String("name", "a b", "a name\nover two lines")
	fs.String("join", "", "join with `spate node --join` here")
	fs.Float64("rate", 0, "records/s")
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	got := parseGoDefaults("Usage of x:\n" + b.String())
	want := []goFlag{
		{Name: "every", Type: "duration", Usage: "how often", Default: "1s"},
		{Name: "join", Type: "value", Usage: "join with 'spate node --join' here"},
		{Name: "n", Type: "int", Usage: "a short one", Default: "3"},
		{Name: "name", Type: "string", Usage: "a name over two lines", Default: "a b"},
		{Name: "on", Type: "bool", Usage: "on by default", Default: "true"},
		{Name: "rate", Type: "float", Usage: "records/s"},
		{Name: "verbose", Type: "bool", Usage: "talk", Default: "false"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n %+v\nwant\n %+v\nfrom\n%s", got, want, b.String())
	}
}

func TestUpFlagsAreParseUpsAndAScenarioTakesThemAll(t *testing.T) {
	fl := upFlags()
	byName := map[string]goFlag{}
	for _, f := range fl {
		byName[f.Name] = f
	}
	for name, typ := range map[string]string{"nodes": "int", "local": "int", "headless": "bool", "duration": "duration", "rate": "float", "events": "string", "respawn": "bool"} {
		if byName[name].Type != typ {
			t.Errorf("--%s: %+v, want type %s", name, byName[name], typ)
		}
	}
	if f := byName["nodes"]; f.Default != "4" {
		t.Errorf("--nodes default %q", f.Default)
	}
	// Every flag of up is a cluster: field of a scenario, but those chaos
	// run sets itself.
	keys := append(chaos.ClusterKeys(), chaos.RunnerKeys()...)
	for _, f := range fl {
		if !slices.Contains(keys, f.Name) {
			t.Errorf("--%s of up is not a cluster: field of a scenario", f.Name)
		}
	}
	if len(fl) < 25 {
		t.Errorf("only %d flags read from ParseUp", len(fl))
	}
}

func TestNormalizeTakesSingleDashLongFlags(t *testing.T) {
	root := newRoot("test", &bytes.Buffer{}, &bytes.Buffer{})
	cmd, _, _ := root.Find([]string{"status"})
	got := normalize(cmd, []string{"status", "-json", "-data=x", "-h", "--", "-json"})
	if want := []string{"status", "--json", "--data=x", "-h", "--", "-json"}; !slices.Equal(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}
