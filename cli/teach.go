package cli

import (
	"io"

	"github.com/spf13/cobra"

	"spate/coord"
	"spate/tour"
	"spate/tui"
)

// viewCmd is spate view: the dashboard over a finished run (package tui).
func (a *app) viewCmd() *cobra.Command {
	return a.engineCmd(engine{
		Use:   "view [--data DIR] [flags]",
		Short: "the dashboard over a finished run, from its events.jsonl, with a transport",
		Long: `View shows a finished run in the dashboard, from its events.jsonl: the
same panes and keys as spate up's, plus a transport. space plays and
pauses, ←/→ step one event (shift+←/→ one second), [ and ] jump to the
previous or next fault, recovery or rescale; f, r, s and c jump to the
next fault, recovery, rescale or checkpoint (F, R, S, C: the previous
one); + and - change the speed
(0.25x to 16x), g and G go to the start and the end; the header shows the
position. Actions that would change a cluster are refused: it is a
recording. A line of events.jsonl that is not an event is one line
naming FILE:LINE, exit 2.`,
		Example: `  spate view
  spate view --data spate-data/20261130-051601-cad249 --play --speed 4`,
		GroupID: "study",
		Main: func(args []string, stdout, stderr io.Writer) int {
			return tui.ViewMain(args, stdout, stderr, coord.ResolveDataDir)
		},
	})
}

// tourCmd is spate tour: a guided lesson on a live cluster (package tour).
func (a *app) tourCmd() *cobra.Command {
	return a.engineCmd(engine{
		Use:   "tour [--headless] [flags]",
		Short: "a guided lesson on a live cluster: checkpoints, backup, a kill and its recovery, a rescale, the tuner",
		Long: `Tour starts a small cluster and walks through a lesson beside the live
dashboard, one numbered step at a time, with the panes each step talks
about starred: the dataflow and its key groups, a checkpoint, the upstream
backup and its trims, a node killed and its recovery, a live rescale, the
interval tuner. n and p go to the next and previous step, q quits at any
time (the job drains), and the tour then verifies the output with the
oracle: exit 0 if nothing was lost, counted twice or wrong. --headless
prints the same lesson with its live figures. The lesson's text is
tour/lesson.md.`,
		Example: `  spate tour
  spate tour --headless --nodes 4`,
		GroupID: "run",
		Main:    tour.Main,
	})
}
