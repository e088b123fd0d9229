package cli

import (
	"github.com/spf13/cobra"

	"spate/report"
)

func (a *app) reportCmd() *cobra.Command {
	return a.engineCmd(engine{
		Use:   "report [--data DIR] [--open]",
		Short: "report.html and report.json of any finished run",
		Long: `Report verifies a finished run with the oracle and writes its report.html
and report.json beside it: the verdict and what the oracle checked, the
checks, throughput and output lag with the faults shaded and the checks'
limits drawn, every recovery on the job's time axis and zoomed on its own
with its phases, the checkpoints (per instance, their durations and stored
sizes), the upstream backups' bytes with spills and pauses, the interval
decisions, the rescale steps and the faults. Any run: up, up --script,
chaos run (its scenario's checks are kept), a benchmark round kept with
--keep or --data. One self-contained page, no script. Exit 0 if every
check passed, 1 if one failed (the report is written), 2 if it could not
be written.`,
		Example: `  spate report
  spate report --data /tmp/run1 --open
  spate bench recovery --rounds 1 --data /tmp/b && spate report --data /tmp/b/rec-spate-0`,
		GroupID: "run",
		Main:    report.Main,
	})
}

func (a *app) exportCmd() *cobra.Command {
	return a.engineCmd(engine{
		Use:   "export --format csv|perfetto [--data DIR] [--out DIR]",
		Short: "a run's events as CSV per kind, or as a Perfetto / chrome://tracing trace",
		Long: `Export writes a finished run's events for the tools researchers use, in
DIR/export unless --out. csv: one KIND.csv per event kind, a column per
field (nested objects as dotted columns, lists as JSON, t_ms in ms since
the job started), for pandas and R. perfetto: trace.json in Chrome's
trace-event format, for ui.perfetto.dev and chrome://tracing: a track per
instance with its checkpoints (the capture inside) and recoveries (their
phases inside), tracks of faults and rescales, and counters of throughput
and output lag.`,
		Example: `  spate export --format csv --data /tmp/run1
  spate export --format perfetto --data /tmp/run1 --out /tmp/traces`,
		GroupID: "run",
		Main:    report.ExportMain,
		Values:  map[string][]string{"format": {"csv", "perfetto"}},
	})
}
