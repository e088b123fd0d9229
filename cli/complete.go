package cli

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"spate/control"
	"spate/coord"
)

func (a *app) completionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "shell completion script",
		Long: `Completion prints a completion script for bash, zsh or fish. It completes
commands, flags and their values and, for the commands that act on a
running cluster, the cluster's node and instance names (asked of the
cluster found through --data, as spate status does; without a running
cluster only the fixed words are offered).`,
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

// clusterNames are the node and instance names of the running cluster
// found through data, and nil when there is none (silently: completion
// has nowhere to say anything).
func clusterNames(data string) (nodes, instances []string) {
	dir, err := coord.ResolveDataDir(data)
	if err != nil {
		return nil, nil
	}
	c, err := control.Dial(dir)
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
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

// targetCompletion completes a verb's target from the running cluster,
// then its KEY= arguments.
func targetCompletion(v verb) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		hasTarget := false
		for _, w := range args {
			hasTarget = hasTarget || !strings.Contains(w, "=")
		}
		if v.target != "" && !hasTarget {
			data, _ := cmd.Flags().GetString("data")
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
