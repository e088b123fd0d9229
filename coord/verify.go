package coord

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"spate/job"
	"spate/traces"
)

// VerifyRun recomputes the expected results of the run in dir with the
// in-process oracle and compares them with the sink's output.
func VerifyRun(dir string) (job.Report, error) { return VerifyRunN(dir, job.MaxDiffs) }

// VerifyRunN is VerifyRun detailing the first max differences (all if
// max is negative).
func VerifyRunN(dir string, max int) (job.Report, error) {
	ri, err := ReadRunInfo(dir)
	if err != nil {
		return job.Report{}, err
	}
	if ri.Finished == nil {
		return job.Report{}, fmt.Errorf("%s: the run has not finished (run.json has no final source positions)", dir)
	}
	if err := checkManifest(dir, ri); err != nil {
		return job.Report{}, err
	}
	src, err := traces.Open(ri.Config.Source, ri.Config.SourceOptions())
	if err != nil {
		return job.Report{}, fmt.Errorf("%s: source: %v", filepath.Join(dir, "run.json"), err)
	}
	n := src.Partitions()
	readers := make([]job.Reader, n)
	limits := make([]uint64, n)
	for p := range n {
		r, err := src.Open(p, 0)
		if err != nil {
			return job.Report{}, err
		}
		defer r.Close()
		readers[p] = r
		limits[p] = ri.Positions[p]
	}
	want, err := job.Oracle(&ri.Job, readers, limits)
	if err != nil {
		return job.Report{}, fmt.Errorf("oracle: %w", err)
	}
	got, torn, err := ReadOutput(dir)
	if err != nil {
		return job.Report{}, err
	}
	rep := job.CompareN(want, got, max)
	rep.Torn = torn
	return rep, nil
}

// ReadOutput reads every sink output file of a run, from its output
// store (output.go). A file whose last line a kill cut short
// (job.ErrTornLine) counts up to that line: the results in it were never
// written, and torn says how many files had one.
func ReadOutput(dir string) (all []job.Result, torn int, err error) {
	st, err := OpenOutput(dir)
	if err != nil {
		return nil, 0, err
	}
	return readOutputStore(st)
}

// checkManifest refuses a checkpoint manifest that belongs to another run
// or job: the run directory has been mixed up.
func checkManifest(dir string, ri *RunInfo) error {
	path := filepath.Join(dir, "checkpoints", "MANIFEST.json")
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var m struct{ Run, Job string }
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if m.Run != ri.Run || m.Job != ri.Job.Name {
		return fmt.Errorf("%s: belongs to run %s (job %s), not to run %s (job %s)", path, m.Run, m.Job, ri.Run, ri.Job.Name)
	}
	return nil
}
