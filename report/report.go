package report

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"spate/internal/human"

	"spate/chaos"
	"spate/coord"
	"spate/export"
)

// Verify is coord.VerifyRun as the chaos package takes it.
func Verify(dir string) (chaos.Verify, error) {
	rep, err := coord.VerifyRun(dir)
	return chaos.Verify{Windows: rep.Windows, Lost: rep.Missing, Duplicated: rep.Duplicated, Wrong: rep.Wrong}, err
}

// Write verifies the finished run in dir with the oracle and writes its
// report.json and report.html (chaos.WriteRunReport). It is what `spate
// report` does, and what `up` calls when a run ends.
func Write(dir string) (*chaos.Report, error) {
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
		return nil, fmt.Errorf("%s: no run.json: not a run directory", dir)
	}
	v, err := Verify(dir)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return chaos.WriteRunReport(dir, v)
}

// Main is `spate report [--data DIR] [--open]`: exit 0 if every check
// passed, 1 if one failed (the report is written either way), 2 if it
// could not be written.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "run directory (default: the latest run)")
	open := fs.Bool("open", false, "open report.html in the browser when it is written")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "spate report: unexpected argument %q (the run is chosen with --data DIR)\n", fs.Arg(0))
		return 2
	}
	dir, err := coord.ResolveDataDir(*data)
	if err != nil {
		fmt.Fprintln(stderr, "spate report:", err)
		return 2
	}
	r, err := Write(dir)
	if err != nil {
		fmt.Fprintln(stderr, "spate report:", err)
		return 2
	}
	page := filepath.Join(dir, "report.html")
	fmt.Fprintf(stdout, "report: %s (%s: %d lost, %d duplicated, %d wrong of %s; %s, %s, %s); %s\n",
		page, r.Verdict, r.Lost, r.Duplicated, r.Wrong, human.Plural(r.Windows, "result"), human.Plural(len(r.Recoveries), "recovery"),
		human.Plural(r.Checkpoints.Count, "checkpoint"), human.Plural(len(r.Rescales), "rescale"), filepath.Join(dir, "report.json"))
	if *open {
		if err := openBrowser(page); err != nil {
			fmt.Fprintf(stderr, "spate report: could not open a browser (%v); the page is %s\n", err, page)
		}
	}
	if r.Verdict != chaos.VerdictPass {
		return 1 // as chaos run: the report is written, a check failed
	}
	return 0
}

func openBrowser(path string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", path).Start()
	}
	return exec.Command(name, path).Start()
}

// ExportMain is `spate export --format csv|perfetto [--data DIR] [--out
// DIR]`: exit 0 when written, 2 when not.
func ExportMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "", "csv (one file per event kind) or perfetto (Chrome trace-event JSON)")
	data := fs.String("data", "", "run directory (default: the latest run)")
	out := fs.String("out", "", "directory to write into (default: DIR/export)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "spate export: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *format != "csv" && *format != "perfetto" {
		fmt.Fprintf(stderr, "spate export: --format: %q: want csv or perfetto\n", *format)
		return 2
	}
	dir, err := coord.ResolveDataDir(*data)
	if err != nil {
		fmt.Fprintln(stderr, "spate export:", err)
		return 2
	}
	if *out == "" {
		*out = filepath.Join(dir, "export")
	}
	switch *format {
	case "csv":
		paths, err := export.CSV(dir, *out)
		if err != nil {
			fmt.Fprintln(stderr, "spate export:", err)
			return 2
		}
		fmt.Fprintf(stdout, "export: %d CSV files (one per event kind) in %s\n", len(paths), *out)
	case "perfetto":
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintln(stderr, "spate export:", err)
			return 2
		}
		path := filepath.Join(*out, "trace.json")
		f, err := os.Create(path)
		if err == nil {
			err = export.Perfetto(dir, f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			os.Remove(path)
			fmt.Fprintln(stderr, "spate export:", err)
			return 2
		}
		fmt.Fprintf(stdout, "export: %s (open it in https://ui.perfetto.dev or chrome://tracing)\n", path)
	}
	return 0
}
