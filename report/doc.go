// Package report holds the commands that read a finished run's directory
// and write what other people and tools read: `spate report` (Main;
// Write for `up` when a run ends), which verifies the run and writes
// report.json and report.html with chaos.WriteRunReport, and `spate
// export` (ExportMain), the export package's CSV and trace files. It is
// the glue of flags, exit codes and one-line errors around them; the
// command line (package cli) wires both as engine commands.
package report
