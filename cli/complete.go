package cli

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"spate/chaos"
	"spate/control"
	"spate/coord"
)

func (a *app) completionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "shell completion script",
		Long: `Completion prints a completion script for bash, zsh or fish. It completes
commands, flags and their values and, for the commands that act on a
running cluster, what the cluster has (asked of the cluster found through
--data, as spate status does): its node and instance names as targets and
as peer=, the operators spate scale can rescale and counts near their
parallelism. Without a running cluster only the fixed words are offered.`,
		Example: `  source <(spate completion bash)
  spate completion zsh > "${fpath[1]}/_spate"
  spate completion fish > ~/.config/fish/completions/spate.fish`,
		GroupID:   "other",
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("spate completion: want one shell: bash, zsh or fish")
			}
			switch args[0] {
			case "bash", "zsh", "fish":
				return nil
			}
			return usagef("spate completion: unknown shell %q%s (want bash, zsh or fish)", args[0], didYouMean(args[0], []string{"bash", "zsh", "fish"}, ""))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(a.stdout, true)
			case "zsh":
				return root.GenZshCompletion(a.stdout)
			default:
				return root.GenFishCompletion(a.stdout, true)
			}
		},
	}
}

// statusTimeout bounds the completion's question to a cluster: a
// completion must never hang the shell.
const statusTimeout = 2 * time.Second

// clusterOf is the running cluster found through data: its status, and
// false when there is none (silently: completion has nowhere to say
// anything).
func clusterOf(data string) (control.Status, bool) {
	dir, err := coord.ResolveDataDir(data)
	if err != nil {
		return control.Status{}, false
	}
	c, err := control.Dial(dir)
	if err != nil {
		return control.Status{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	st, err := c.Status(ctx)
	return st, err == nil
}

// clusterNames are the node and instance names of the running cluster
// found through data, nil when there is none.
func clusterNames(data string) (nodes, instances []string) {
	st, ok := clusterOf(data)
	if !ok {
		return nil, nil
	}
	for _, n := range st.Nodes {
		nodes = append(nodes, n.ID)
	}
	for _, in := range st.Instances {
		instances = append(instances, in.ID)
	}
	return nodes, instances
}

// keyedOps are the operators of the running cluster that rescale (those
// whose instances own key groups), with their parallelism; nil without
// a cluster.
func keyedOps(data string) map[string]int {
	st, ok := clusterOf(data)
	if !ok {
		return nil
	}
	ops := map[string]int{}
	for _, in := range st.Instances {
		if len(in.KeyGroups) > 0 && in.Op != "sink" {
			ops[in.Op]++
		}
	}
	return ops
}

// keyValues are the values a verb's KEY= takes, where they are few or
// known from the cluster (peer=NODE).
func keyValues(v verb, key, data string) []string {
	switch key {
	case "peer":
		nodes, _ := clusterNames(data)
		return nodes
	case "shape":
		return []string{"one", "majority", "bridge"}
	case "file":
		return chaos.DamageFiles
	case "oneway", "stall", "reset", "corrupt", "fail":
		return []string{"true", "false"}
	case "latency", "jitter", "slow":
		return []string{"10ms", "50ms", "200ms"}
	case "bandwidth":
		return []string{"1MB/s", "10MB/s"}
	case "interval":
		return []string{"auto", "500ms", "1s", "5s"}
	}
	return nil
}

// targetCompletion completes a verb's target from the running cluster,
// then its KEY= arguments.
func targetCompletion(v verb) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		data, _ := cmd.Flags().GetString("data")
		if key, _, ok := strings.Cut(toComplete, "="); ok && slices.Contains(v.keys, key) {
			var out []string
			for _, val := range keyValues(v, key, data) {
				out = append(out, key+"="+val)
			}
			return prefixed(out, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		hasTarget := false
		for _, w := range args {
			hasTarget = hasTarget || !strings.Contains(w, "=")
		}
		if v.target != "" && !hasTarget {
			nodes, instances := clusterNames(data)
			out = append(out, nodes...)
			out = append(out, instances...)
			out = append(out, "one", "minority", "majority", "all")
			if v.name == "partition" {
				out = append(out, "bridge")
			} else {
				out = append(out, "count", "rollup", "source", "sink")
			}
		}
		for _, k := range v.keys {
			out = append(out, k+"=")
		}
		return prefixed(out, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// flagCompletion completes the flags of a command whose flag parsing is
// off (up, the benchmarks, tuner sim: their engines parse), and the
// values in values.
func flagCompletion(c *cobra.Command, values map[string][]string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if n := len(args); n > 0 {
			if name, ok := strings.CutPrefix(args[n-1], "--"); ok && !strings.Contains(name, "=") {
				if f := c.Flags().Lookup(name); f != nil && f.NoOptDefVal == "" {
					if vs, ok := values[name]; ok {
						return prefixed(vs, toComplete), cobra.ShellCompDirectiveNoFileComp
					}
					return nil, cobra.ShellCompDirectiveDefault // a path, a number: the shell's own
				}
			}
		}
		if !strings.HasPrefix(toComplete, "-") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				out = append(out, "--"+f.Name+"\t"+firstSentence(f.Usage))
			}
		})
		sort.Strings(out)
		return prefixed(out, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func prefixed(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

func firstSentence(s string) string {
	if i := strings.IndexAny(s, ";("); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
