package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"spate/control"
)

// cliArgs are the words of a command that acts on a running cluster:
// flags (--data DIR, --json, --for D) anywhere, KEY=VALUE arguments, and
// positional words.
type cliArgs struct {
	data  string
	json  bool
	words []string
	args  map[string]string
}

func parseCLI(cmd string, in []string) (cliArgs, error) {
	a := cliArgs{args: map[string]string{}}
	for i := 0; i < len(in); i++ {
		w := in[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
		switch {
		case strings.HasPrefix(w, "-"):
			if name == "json" {
				a.json = true
				continue
			}
			if !hasVal {
				if i+1 >= len(in) {
					return a, fmt.Errorf("%s: flag --%s needs a value", cmd, name)
				}
				i++
				val = in[i]
			}
			if name == "data" {
				a.data = val
			} else {
				a.args[name] = val
			}
		case hasVal:
			a.args[name] = val
		default:
			a.words = append(a.words, w)
		}
	}
	return a, nil
}

func dialRun(cmd, data string, stderr io.Writer) (*control.Client, bool) {
	dir, err := ResolveDataDir(data)
	if err == nil {
		var c *control.Client
		if c, err = control.Dial(dir); err == nil {
			return c, true
		}
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	return nil, false
}

// StatusMain is `spate status [--data DIR] [--json]`.
func StatusMain(args []string, stdout, stderr io.Writer) int {
	a, err := parseCLI("spate status", args)
	if err == nil && (len(a.words) > 0 || len(a.args) > 0) {
		err = fmt.Errorf("spate status: unexpected arguments %q (usage: spate status [--data DIR] [--json])", args)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	c, ok := dialRun("spate status", a.data, stderr)
	if !ok {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "spate status:", err)
		return 2
	}
	if a.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
		return 0
	}
	WriteStatus(stdout, st)
	return 0
}

// WriteStatus prints a status as two tables.
func WriteStatus(w io.Writer, st control.Status) {
	fmt.Fprintf(w, "run %s  job %s  ft %s  %s\n\n", st.Run, st.Job, st.FT, st.Phase)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPID\tSTATE\tINSTANCES")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", n.ID, n.PID, n.State, strings.Join(n.Instances, " "))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "INSTANCE\tNODE\tGEN\tKEY GROUPS")
	for _, in := range st.Instances {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", in.ID, in.Node, in.Generation, groupRanges(in.KeyGroups))
	}
	_ = tw.Flush()
	for _, f := range st.Faults {
		until := "until healed"
		if !f.Until.IsZero() {
			until = "until " + f.Until.Format("15:04:05")
		}
		fmt.Fprintf(w, "fault %d: %s on %s, %s\n", f.ID, f.Action, strings.Join(f.Nodes, ","), until)
	}
}

// groupRanges writes sorted key groups as ranges: 0-63 64-127.
func groupRanges(g []int) string {
	if len(g) == 0 {
		return "-"
	}
	var parts []string
	lo := g[0]
	for i := 1; i <= len(g); i++ {
		if i < len(g) && g[i] == g[i-1]+1 {
			continue
		}
		if lo == g[i-1] {
			parts = append(parts, fmt.Sprint(lo))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", lo, g[i-1]))
		}
		if i < len(g) {
			lo = g[i]
		}
	}
	return strings.Join(parts, " ")
}

// ActMain sends one action to a running cluster: `spate chaos VERB
// [TARGET] [KEY=VALUE...] [--for D] [--data DIR]` and `spate scale OP N`.
// cmd names the command in messages; verb is the action's verb.
func ActMain(cmd, verb string, args []string, stdout, stderr io.Writer) int {
	a, err := parseCLI(cmd, args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	act := control.Action{Verb: verb, Args: a.args}
	switch {
	case verb == "scale":
		if len(a.words) != 2 {
			fmt.Fprintf(stderr, "%s: usage: spate scale OP N [--data DIR]\n", cmd)
			return 2
		}
		act.Target, act.Args["n"] = a.words[0], a.words[1]
	case len(a.words) > 1:
		fmt.Fprintf(stderr, "%s: one target only, got %q\n", cmd, a.words)
		return 2
	case len(a.words) == 1:
		act.Target = a.words[0]
	}
	if len(act.Args) == 0 {
		act.Args = nil
	}
	c, ok := dialRun(cmd, a.data, stderr)
	if !ok {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Act(ctx, act)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	if a.json {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintln(stdout, res.Text)
	}
	return 0
}
