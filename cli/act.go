package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"spate/control"
	"spate/coord"
)

// dataFlag adds --data DIR, the run a command acts on.
func dataFlag(c *cobra.Command) {
	c.Flags().String("data", "", "run directory (default: the newest run, ./spate-data/latest)")
	_ = c.RegisterFlagCompletionFunc("data", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
}

func dialRun(cmd, data string) (*control.Client, error) {
	dir, err := coord.ResolveDataDir(data)
	if err == nil {
		var c *control.Client
		if c, err = control.Dial(dir); err == nil {
			return c, nil
		}
	}
	return nil, usagef("%s: %v", cmd, err)
}

func (a *app) statusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "status [--data DIR] [--json]",
		Short: "nodes and instances of a running cluster",
		Long: `Status asks a running cluster (found through --data, by default the newest
run) for its nodes (state, pid, instances), its instances (node,
generation, key groups) and its faults.`,
		Example: `  spate status
  spate status --data /tmp/run1 --json
  spate status --json | jq '.nodes[] | select(.state != "alive")'`,
		GroupID: "act",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			data, _ := cmd.Flags().GetString("data")
			asJSON, _ := cmd.Flags().GetBool("json")
			c, err := dialRun("spate status", data)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := c.Status(ctx)
			if err != nil {
				return usagef("spate status: %v", err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				_ = enc.Encode(st)
				return nil
			}
			WriteStatus(a.stdout, st)
			return nil
		},
	}
	dataFlag(c)
	c.Flags().Bool("json", false, "print the status as JSON")
	return c
}

// noArgs refuses positional arguments in one line.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s: unexpected argument %q", cmd.CommandPath(), args[0])
	}
	return nil
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

// verb is one action of `spate chaos` on a running cluster.
type verb struct {
	name, short, long string
	target            string   // "": none; else how the synopsis names it
	needTarget        bool     // the target is required
	keys              []string // KEY=VALUE arguments (each also --KEY VALUE)
	lasting           bool     // takes --for D
	example           string
}

var verbs = []verb{
	{name: "kill", short: "SIGKILL the target's node processes", target: "TARGET", needTarget: true,
		long:    "Kill sends SIGKILL to the node processes of the target; a respawned node takes each one's place (--respawn).",
		example: "  spate chaos kill n2\n  spate chaos kill count/1        # the node hosting count's instance 1\n  spate chaos kill one --data /tmp/run1"},
	{name: "restart", short: "SIGKILL the target, then a fresh process joins in its place", target: "TARGET", needTarget: true,
		long:    "Restart kills the target's node processes and starts a fresh process in each one's place.",
		example: "  spate chaos restart n3\n  spate chaos restart minority"},
	{name: "pause", short: "SIGSTOP the target (past the detection timeout it is lost, then a fenced zombie)", target: "TARGET", needTarget: true, lasting: true,
		long:    "Pause stops the target's node processes with SIGSTOP; past the failure-detection timeout the node is lost, and when it wakes it is a fenced zombie. With --for the coordinator resumes it itself. The target coord (with --for) stalls the coordinator's own event loop instead, as a GC pause or a slow disk would: the nodes run on, their messages queue, and the heartbeats judged after it count only the time the coordinator ran.",
		example: "  spate chaos pause n2 --for 3s\n  spate chaos pause count\n  spate chaos pause coord --for 3s\n  spate chaos resume n2"},
	{name: "resume", short: "SIGCONT a paused target", target: "TARGET", needTarget: true,
		long:    "Resume continues the target's paused node processes (SIGCONT).",
		example: "  spate chaos resume n2\n  spate chaos resume all"},
	{name: "partition", short: "cut the cluster, the coordinator's links included", target: "[one|majority|bridge|TARGET]", keys: []string{"shape", "groups", "oneway"}, lasting: true,
		long:    "Partition cuts the cluster: traffic across the cut is held, not dropped, and flows again on heal, as TCP would retransmit it. A shape (one, majority, bridge), explicit groups (groups=n1,n2|n3,n4), one-way (oneway=true), or a target to isolate.",
		example: "  spate chaos partition majority --for 5s\n  spate chaos partition groups='n1,n2|n3,n4' oneway=true\n  spate chaos partition n2"},
	{name: "link", short: "slow, stall or reset the target's links", target: "TARGET", needTarget: true, keys: []string{"latency", "jitter", "bandwidth", "stall", "reset", "peer"}, lasting: true,
		long:    "Link slows, stalls or resets the links of the target (to one peer with peer=N); nodes redial a reset link and their streams resume.",
		example: "  spate chaos link n2 latency=50ms jitter=10ms --for 10s\n  spate chaos link n3 bandwidth=1MB/s peer=n1\n  spate chaos link n1 reset=true"},
	{name: "store", short: "slow or fail the target's checkpoint writes, or damage its newest checkpoints", target: "TARGET", keys: []string{"slow", "fail", "corrupt", "file"}, lasting: true,
		long:    "Store slows (slow=D) or fails (fail=true) the checkpoint writes of the target's nodes, or damages the newest checkpoint file of each instance they host (corrupt=true). file=newest|base|fallback damages that file of the chain (the newest file, the base of the latest restorable checkpoint, the fallback checkpoint's own file), of the target instance alone when the target is one; each damage changes a byte no earlier one changed.",
		example: "  spate chaos store n2 slow=200ms --for 10s\n  spate chaos store count corrupt=true\n  spate chaos store count#0 file=base\n  spate chaos store all fail=true --for 3s"},
	{name: "heal", short: "lift every fault and resume paused nodes, or only a target's", target: "[TARGET]",
		long:    "Heal lifts every fault (partitions, link and store faults) and resumes paused nodes. With a TARGET (a node, a list, an instance) it lifts only the faults that touch the target's nodes and resumes only those of them paused by hand.",
		example: "  spate chaos heal\n  spate chaos heal n2 --data /tmp/run1"},
	{name: "checkpoint", short: "checkpoint the target's instances now", target: "[TARGET]",
		long:    "Checkpoint asks the target's instances (every instance without a target) to checkpoint now.",
		example: "  spate chaos checkpoint\n  spate chaos checkpoint count"},
	{name: "interval", short: "pin or release an instance's checkpoint interval", target: "TARGET", needTarget: true, keys: []string{"interval"},
		long:    "Interval pins the checkpoint interval of the target's instances (interval=5s) or gives them back to the tuner (interval=auto).",
		example: "  spate chaos interval count#0 interval=5s\n  spate chaos interval count interval=auto"},
	{name: "drain", short: "end the job: sources stop, windows fire, sinks flush",
		long:    "Drain ends the job as --duration would: the sources stop, a final watermark fires every open window, the sinks flush, and up exits.",
		example: "  spate chaos drain\n  spate chaos drain --data /tmp/run1"},
}

// targetsHelp is said once, in the help of chaos and of each verb.
const targetsHelp = `Targets: a node (n2), a list (n1,n2), one, minority, majority, all, an
instance (count/1 or count#1: the node hosting it) or an operator (count: a
node hosting one of its instances). KEY=VALUE arguments may also be given
as --KEY VALUE. The cluster is found through --data (default: the newest
run).`

func (a *app) chaosCmd() *cobra.Command {
	var subs []*cobra.Command
	subs = append(subs, a.chaosRunCmd())
	for _, v := range verbs {
		subs = append(subs, a.verbCmd(v))
	}
	return group("chaos VERB [TARGET] [KEY=VALUE...] [--for D] [--data DIR]",
		"faults on a running cluster (kill, pause, partition, link, store, heal, ...); chaos run FILE.yaml: a scripted run with a verdict",
		"Chaos breaks a running cluster through its control API, or runs a scenario file\n(spate chaos run) with a verdict.\n\n"+targetsHelp,
		"  spate chaos run examples/teaching.yaml --data /tmp/demo\n  spate chaos kill n2\n  spate chaos pause count --for 2s\n  spate chaos heal",
		"act", subs...)
}

func (a *app) verbCmd(v verb) *cobra.Command {
	use := v.name
	if v.target != "" {
		use += " " + v.target
	}
	for _, k := range v.keys {
		use += " [" + k + "=V]"
	}
	if v.lasting {
		use += " [--for D]"
	}
	use += " [--data DIR]"
	c := &cobra.Command{
		Use:     use,
		Short:   v.short,
		Long:    v.long + "\n\n" + targetsHelp,
		Example: v.example,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.act(cmd, "spate chaos "+v.name, v, args)
		},
		ValidArgsFunction: targetCompletion(v),
	}
	dataFlag(c)
	c.Flags().Bool("json", false, "print the cluster's answer as JSON")
	if v.lasting {
		c.Flags().String("for", "", "lift the fault after this long (e.g. 5s); without it, until healed")
	}
	for _, k := range v.keys {
		c.Flags().String(k, "", "same as "+k+"=VALUE")
	}
	return c
}

func (a *app) scaleCmd() *cobra.Command {
	v := verb{name: "scale"}
	c := &cobra.Command{
		Use:   "scale OP N [--data DIR]",
		Short: "live rescale of an operator of a running cluster",
		Long: `Scale rescales count or rollup of a running cluster to N instances. With
--ft spate and --rescale eds (the defaults) it is live: moving key-group
slices are captured, loaded by their new owners and re-routed while the
rest of the job runs; --rescale restart stops the job, takes a global
checkpoint and restarts it with the new parallelism.`,
		Example: `  spate scale count 4
  spate scale rollup 1 --data /tmp/run1`,
		GroupID: "act",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.act(cmd, "spate scale", v, args)
		},
		// OP from the running cluster's keyed operators (count and rollup
		// without one); N around OP's parallelism there.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			data, _ := cmd.Flags().GetString("data")
			ops := keyedOps(data)
			switch len(args) {
			case 0:
				names := []string{"count", "rollup"}
				if len(ops) > 0 {
					names = slices.Sorted(maps.Keys(ops))
				}
				return prefixed(names, toComplete), cobra.ShellCompDirectiveNoFileComp
			case 1:
				ns := []string{"1", "2", "3", "4", "6", "8"}
				if n := ops[args[0]]; n > 0 {
					ns = nil
					for _, k := range []int{n + 1, n * 2, n - 1} {
						if k >= 1 && k != n {
							ns = append(ns, strconv.Itoa(k))
						}
					}
				}
				return prefixed(ns, toComplete), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}
	dataFlag(c)
	c.Flags().Bool("json", false, "print the cluster's answer as JSON")
	return c
}

// act sends one action to a running cluster: `spate chaos VERB [TARGET]
// [KEY=VALUE...] [--for D] [--data DIR]` and `spate scale OP N`. name
// names the command in messages.
func (a *app) act(cmd *cobra.Command, name string, v verb, args []string) error {
	fs := cmd.Flags()
	act := control.Action{Verb: v.name, Args: map[string]string{}}
	var words []string
	for _, w := range args {
		k, val, ok := strings.Cut(w, "=")
		if !ok {
			words = append(words, w)
			continue
		}
		if k == "for" && v.lasting || slices.Contains(v.keys, k) {
			act.Args[k] = val
			continue
		}
		known := slices.Clone(v.keys)
		if v.lasting {
			known = append(known, "for")
		}
		if len(known) == 0 {
			return usagef("%s: %q: %s takes no KEY=VALUE arguments", name, w, v.name)
		}
		return usagef("%s: unknown argument %q %s", name, w, didYouMeanOr(k, known))
	}
	for _, k := range append(slices.Clone(v.keys), "for") {
		if f := fs.Lookup(k); f != nil && f.Changed {
			act.Args[k] = f.Value.String()
		}
	}
	switch {
	case v.name == "scale":
		if len(words) != 2 {
			return usagef("%s: want OP N, e.g. spate scale count 4 (got %d words)", name, len(words))
		}
		act.Target, act.Args["n"] = words[0], words[1]
	case len(words) > 1:
		return usagef("%s: one target only, got %q", name, words)
	case len(words) == 1 && v.target == "":
		return usagef("%s: unexpected argument %q (%s takes no target)", name, words[0], v.name)
	case len(words) == 1:
		act.Target = words[0]
	case v.needTarget:
		return usagef("%s: missing TARGET (a node like n2, one, minority, majority, all, an operator or an instance like count/1)", name)
	}
	if len(act.Args) == 0 {
		act.Args = nil
	}
	data, _ := fs.GetString("data")
	asJSON, _ := fs.GetBool("json")
	c, err := dialRun(name, data)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Act(ctx, act)
	if err != nil {
		return &exitError{code: exitFail, msg: fmt.Sprintf("%s: %v", name, err)}
	}
	if asJSON {
		_ = json.NewEncoder(a.stdout).Encode(res)
	} else {
		fmt.Fprintln(a.stdout, res.Text)
	}
	return nil
}

// didYouMeanOr is "(did you mean X?)" or the list of known names.
func didYouMeanOr(word string, known []string) string {
	if s := didYouMean(word, known, ""); s != "" {
		return "(" + strings.TrimPrefix(s, ": ") + ")"
	}
	return "(want " + strings.Join(known, ", ") + ")"
}
