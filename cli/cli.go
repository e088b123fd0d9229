package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"spate/coord"
)

// Exit codes everywhere: 0 ok, 1 a check failed (or the cluster refused an
// action), 2 bad input or could not run.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// exitError ends a command with an exit code and, unless msg is empty,
// one line on stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usagef is a mistake in the command line: one line, exit 2.
func usagef(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// code ends a command with rc; the command printed what it had to say.
func code(rc int) error {
	if rc == 0 {
		return nil
	}
	return &exitError{code: rc}
}

// Main runs the command line args (without the program name) and returns
// the exit code. version is the binary's version.
func Main(version string, args []string, stdout, stderr io.Writer) int {
	coord.Version = version // run.json's provenance
	root := newRoot(version, stdout, stderr)
	if cmd, _, err := root.Find(args); err == nil && cmd != root {
		args = normalize(cmd, args)
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, oneLine(ee.msg))
		}
		return ee.code
	}
	// cobra's own errors (its argument checks) are mistakes in the
	// command line.
	fmt.Fprintln(stderr, "spate:", oneLine(err.Error()))
	return exitUsage
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// app is the state of one Main: the streams and the version.
type app struct {
	version        string
	stdout, stderr io.Writer
}

func newRoot(version string, stdout, stderr io.Writer) *cobra.Command {
	a := &app{version: version, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "spate",
		Short: "a lab cluster for fault tolerance in stream processing",
		Long: `spate: a lab cluster for fault tolerance in stream processing.

It starts a real multi-process cluster on this machine, runs a stateful
streaming job protected by checkpoints and upstream backup, lets you break
it (kill, pause, partition, slow its nodes) by key, by command or from a
scenario, and proves with an oracle that no result was lost or counted
twice. Exit codes everywhere: 0 ok, 1 a check failed, 2 bad input or could
not run.`,
		Example: `  spate up                                  # the dashboard on a 4-node cluster
  spate up --headless --duration 20s --data /tmp/run1
  spate verify --data /tmp/run1
  spate chaos run examples/teaching.yaml --junit report.xml`,
		Version:            version,
		SilenceErrors:      true,
		SilenceUsage:       true,
		DisableAutoGenTag:  true,
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-v") {
				return a.printVersion()
			}
			return groupRun(cmd, args)
		},
	}
	root.SetVersionTemplate("spate {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddGroup(&cobra.Group{ID: "run", Title: "Run a cluster:"},
		&cobra.Group{ID: "act", Title: "Act on a running cluster:"},
		&cobra.Group{ID: "study", Title: "Measure and study:"},
		&cobra.Group{ID: "other", Title: "Other commands:"})
	root.SetHelpCommandGroupID("other")
	root.AddCommand(
		a.upCmd(), a.verifyCmd(), a.reportCmd(), a.exportCmd(),
		a.statusCmd(), a.chaosCmd(), a.scaleCmd(),
		a.benchCmd(), a.simCmd(), a.tunerCmd(), a.tracesCmd(),
		a.viewCmd(), a.tourCmd(),
		a.versionCmd(), a.completionCmd(), a.manCmd(), a.nodeCmd(),
	)
	root.SetHelpCommand(a.helpCmd(root))
	return root
}

// groupRun is the RunE of a command that only holds subcommands: with no
// argument it shows its help on stderr (exit 2), with an unknown one it
// names it. Its flag parsing is off so that an unknown word is reported
// as such, not as some flag after it.
func groupRun(cmd *cobra.Command, args []string) error {
	for _, w := range args {
		if w == "--" {
			break
		}
		if w == "-h" || w == "--help" || w == "-help" {
			return cmd.Help()
		}
	}
	switch {
	case len(args) == 0 && !cmd.HasParent():
		cmd.SetOut(cmd.ErrOrStderr())
		_ = cmd.Usage()
		return code(exitUsage)
	case len(args) == 0:
		return usagef("%s: missing command (have %s; %s --help for more)", cmd.CommandPath(), strings.Join(subNames(cmd), ", "), cmd.CommandPath())
	case strings.HasPrefix(args[0], "-"):
		return usagef("%s: unknown flag %s (a command comes first: %s)", cmd.CommandPath(), args[0], strings.Join(subNames(cmd), ", "))
	}
	return unknownCommand(cmd, args[0])
}

// unknownCommand is the one-line error for a word that names no
// subcommand of cmd.
func unknownCommand(cmd *cobra.Command, word string) error {
	names := subNames(cmd)
	return usagef("%s: unknown command %q%s (have %s)", cmd.CommandPath(), word, didYouMean(word, names, ""), strings.Join(names, ", "))
}

// subNames are the names of cmd's visible subcommands.
func subNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// didYouMean is " (did you mean X?)"-like text for the known name closest
// to word, when one is close enough; prefix goes before the name ("--").
func didYouMean(word string, known []string, prefix string) string {
	best, bestD := "", 3
	for _, k := range known {
		d := distance(strings.ToLower(word), strings.ToLower(k))
		if len(word) >= 3 && strings.HasPrefix(k, word) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || len(word) < 2 {
		return ""
	}
	return ": did you mean " + prefix + best + "?"
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// flagError turns pflag's parse errors into one line naming the flag,
// with a suggestion for an unknown one.
func flagError(cmd *cobra.Command, err error) error {
	return usagef("%s: %s", cmd.CommandPath(), flagMessage(cmd.Flags(), err))
}

func flagMessage(fs *pflag.FlagSet, err error) string {
	msg := err.Error()
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		name, _, _ = strings.Cut(name, "=")
		return fmt.Sprintf("unknown flag --%s%s", name, didYouMean(name, names, "--"))
	}
	if rest, ok := strings.CutPrefix(msg, "unknown shorthand flag: "); ok {
		return "unknown flag " + rest
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return fmt.Sprintf("flag %s needs a value", name)
	}
	// invalid argument "x" for "--nodes" flag: want a whole number
	if rest, ok := strings.CutPrefix(msg, "invalid argument "); ok {
		if val, rest, ok := cutQuoted(rest); ok {
			if rest, ok := strings.CutPrefix(rest, " for "); ok {
				if name, rest, ok := cutQuoted(rest); ok {
					name, _, _ = strings.Cut(name, ", ")
					if i := strings.LastIndex(name, "--"); i >= 0 {
						name = name[i:]
					}
					why := strings.TrimPrefix(rest, " flag: ")
					return fmt.Sprintf("%s %q: %s", name, val, why)
				}
			}
		}
	}
	return msg
}

// cutQuoted cuts a Go-quoted string off the front of s.
func cutQuoted(s string) (val, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '"' {
			return s[1:i], s[i+1:], true
		}
	}
	return "", s, false
}

// normalize rewrites -name into --name for the long flags of cmd, as the
// flag package (which every command used before) accepts both.
func normalize(cmd *cobra.Command, args []string) []string {
	if cmd.Name() == "node" {
		return args
	}
	long := map[string]bool{}
	visit := func(f *pflag.Flag) { long[f.Name] = true }
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	out := slices.Clone(args)
	for i, w := range out {
		if w == "--" {
			break
		}
		if len(w) > 2 && w[0] == '-' && w[1] != '-' {
			name, _, _ := strings.Cut(w[1:], "=")
			if len(name) > 1 && long[name] {
				out[i] = "-" + w
			}
		}
	}
	return out
}

// helpCmd is `spate help [COMMAND...]`: the help of a command on stdout;
// an unknown command is one line and exit 2.
func (a *app) helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:     "help [COMMAND...]",
		Short:   "help about any command",
		GroupID: "other",
		Long:    "Help shows a command's synopsis, its flags and examples.",
		Example: `  spate help up
  spate help chaos kill
  spate help bench recovery`,
		Args: cobra.ArbitraryArgs,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			c, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, s := range c.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, s.Name()+"\t"+s.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c := root
			for _, w := range args {
				next := findSub(c, w)
				if next == nil {
					return unknownCommand(c, w)
				}
				c = next
			}
			return c.Help()
		},
	}
}

// findSub is cmd's subcommand named (or aliased) name, nil if none.
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// helpRequested reports whether args ask for help before a "--".
func helpRequested(args []string) bool {
	for _, w := range args {
		switch w {
		case "--":
			return false
		case "-h", "--help", "-help":
			return true
		}
	}
	return false
}
