package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"spate/coord"
	"spate/job"
)

func (a *app) verifyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "verify [--data DIR] [--json] [--diffs N]",
		Short: "compare a run's output with the oracle",
		Long: `Verify recomputes the expected results of a finished run with the
in-process oracle, from run.json, and compares them with the sink output.
Exit 0 only if nothing is missing, duplicated or wrong; 1 if something is;
2 if the run cannot be read.`,
		Example: `  spate verify
  spate verify --data /tmp/run1
  spate verify --data /tmp/run1 --json | jq .missing
  spate verify --diffs -1       # list every difference, not the first 10`,
		GroupID: "run",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			data, _ := cmd.Flags().GetString("data")
			asJSON, _ := cmd.Flags().GetBool("json")
			diffs, _ := cmd.Flags().GetInt("diffs")
			return code(a.verify(data, asJSON, diffs))
		},
	}
	dataFlag(c)
	c.Flags().Bool("json", false, "print the report as JSON")
	c.Flags().Int("diffs", job.MaxDiffs, "how many differences to detail (-1: all)")
	return c
}

func (a *app) verify(data string, asJSON bool, diffs int) int {
	stdout, stderr := a.stdout, a.stderr
	dir, err := coord.ResolveDataDir(data)
	if err != nil {
		fmt.Fprintln(stderr, "spate verify:", err)
		return exitUsage
	}
	rep, err := coord.VerifyRunN(dir, diffs)
	if err != nil {
		fmt.Fprintln(stderr, "spate verify:", err)
		return exitUsage
	}
	ri, riErr := coord.ReadRunInfo(dir)
	if riErr == nil && !ri.Config.Break.Empty() {
		w := stdout // on the report's side, but never inside its JSON
		if asJSON {
			w = stderr
		}
		fmt.Fprintf(w, "%s: the run's protocol had a mechanism deliberately wrong (run.json: break)\n", ri.Config.Break.Banner())
	}
	if riErr == nil && !ri.Complete {
		fmt.Fprintln(stderr, "spate verify: note: a source instance was lost, so its last position is the one it last reported: counts near the loss may show as wrong")
	}
	if rep.Torn > 0 {
		fmt.Fprintf(stderr, "spate verify: note: %d output file(s) end in a line a kill cut short; it counts as not written\n", rep.Torn)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		fmt.Fprintln(stdout, rep.String())
		for _, d := range rep.Diffs {
			fmt.Fprintf(stdout, "  %s %s %s window %d\n", d.Kind, d.ID.Op, d.ID.Key, d.ID.Window)
		}
	}
	if !rep.OK() {
		return exitFail
	}
	return exitOK
}
