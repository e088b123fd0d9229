package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"spate/coord"
)

// exitInterrupted is a benchmark's exit code after Ctrl-C (128 + SIGINT,
// as a shell reports it).
const exitInterrupted = 130

// Meta is what the JSON of every benchmark holds beside its figures: the
// configuration it ran with (every flag, defaults included) and where the
// figures come from (the same provenance as run.json's).
type Meta struct {
	Benchmark  string            `json:"benchmark"`
	Config     map[string]string `json:"config"`
	Provenance coord.Provenance  `json:"provenance"`
	Started    time.Time         `json:"started"`
}

// session is what one invocation of a benchmark shares: the context that
// Ctrl-C cancels, the progress lines, the run directories and what goes
// into the JSON and the --html page.
type session struct {
	name   string
	fs     *flag.FlagSet
	stderr io.Writer
	keep   *bool
	html   *string
	data   *string

	ctx     context.Context
	stop    func()
	done    chan struct{} // closed by end
	said    bool          // the interruption was reported
	prog    *progress
	meta    Meta
	root    string
	cleanup func(rc int)
}

// newSession registers the flags every benchmark has (--keep, --html,
// --data) on fs; start is called once fs is parsed.
func newSession(name string, fs *flag.FlagSet, stderr io.Writer) *session {
	s := &session{name: name, fs: fs, stderr: stderr}
	s.keep = fs.Bool("keep", false, "keep the temporary run directories (Ctrl-C and success remove them otherwise; a failure keeps them)")
	s.html = fs.String("html", "", "also write an HTML page to this file: the configurations side by side, one dot per round")
	s.data = fs.String("data", "", "keep the run directories under this directory")
	return s
}

// start makes the run directories' root, catches Ctrl-C and SIGTERM, and
// sets up progress over steps of the given weights (each step's expected
// seconds). The caller defers s.end(rc).
func (s *session) start(weights []float64) error {
	s.meta = Meta{Benchmark: s.name, Config: map[string]string{}, Provenance: coord.NewProvenance(), Started: time.Now().UTC()}
	s.fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "json" && f.Name != "html" {
			s.meta.Config[f.Name] = f.Value.String()
		}
	})
	if *s.html != "" {
		if st, err := os.Stat(filepath.Dir(*s.html)); err != nil || !st.IsDir() {
			return fmt.Errorf("--html %s: no directory %s to write it in", *s.html, filepath.Dir(*s.html))
		}
	}
	root, cleanup, err := tempRoot(*s.data, *s.keep, s.stderr)
	if err != nil {
		return err
	}
	s.root, s.cleanup = root, cleanup
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	s.ctx, s.stop, s.done = ctx, stop, make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop() // a second Ctrl-C ends the process at once
			fmt.Fprintf(s.stderr, "spate bench %s: interrupted: the current run drains, then the benchmark stops (Ctrl-C again to abort)\n", s.name)
		case <-s.done:
		}
	}()
	s.prog = newProgress(s.stderr, time.Now, weights)
	return nil
}

// end finishes the session: rc is the benchmark's exit code. It removes
// the temporary run directories unless they are kept (--keep, --data, or
// a failure, whose runs say why).
func (s *session) end(rc int) {
	if s.done != nil {
		close(s.done)
		s.stop()
	}
	if s.cleanup != nil {
		s.cleanup(rc)
	}
}

// interrupted reports whether the benchmark must stop now; it says so
// once, with how far it got.
func (s *session) interrupted() bool {
	if s.ctx.Err() == nil {
		return false
	}
	if !s.said {
		s.said = true
		fmt.Fprintf(s.stderr, "spate bench %s: stopped after %d of %d runs\n", s.name, max(s.prog.k-1, 0), s.prog.total())
	}
	return true
}

// discard removes a run's directory once it has served (verified): the
// runs of a long benchmark would fill the disk otherwise. Kept with
// --keep or --data. It reports whether it removed it.
func (s *session) discard(dir string) bool {
	if *s.keep || *s.data != "" {
		return false
	}
	os.RemoveAll(dir)
	return true
}

// step announces the next step.
func (s *session) step(format string, args ...any) { s.prog.next(fmt.Sprintf(format, args...)) }

// configString is the flags as --name=value, sorted, for the page.
func (m Meta) configString() []string {
	var out []string
	for k, v := range m.Config {
		out = append(out, "--"+k+"="+v)
	}
	sort.Strings(out)
	return out
}

// progress writes "[k/N] what, ETA 1m20s" lines as the steps of a
// benchmark start. The ETA scales the weights (expected seconds) of the
// steps left by how long the finished ones really took.
type progress struct {
	w       io.Writer
	now     func() time.Time
	weights []float64
	k       int // steps started
	began   time.Time
	stepAt  time.Time
	doneW   float64 // weight of the finished steps
	doneT   time.Duration
}

func newProgress(w io.Writer, now func() time.Time, weights []float64) *progress {
	return &progress{w: w, now: now, weights: weights, began: now()}
}

func (p *progress) total() int { return len(p.weights) }

// next finishes the step in progress and announces the next one.
func (p *progress) next(what string) {
	t := p.now()
	if p.k > 0 && p.k <= len(p.weights) {
		p.doneW += p.weights[p.k-1]
		p.doneT = t.Sub(p.began)
	}
	p.k++
	var left float64
	for i := p.k - 1; i < len(p.weights); i++ {
		left += p.weights[i]
	}
	eta := time.Duration(left * float64(time.Second))
	if p.doneW > 0 {
		eta = time.Duration(left / p.doneW * float64(p.doneT))
	}
	fmt.Fprintf(p.w, "[%d/%d] %s, ETA %s\n", p.k, len(p.weights), what, eta.Round(time.Second))
}

// drop forgets the last n steps, which will not run (a benchmark that
// stops early, a run that turned out not to be needed).
func (p *progress) drop(n int) {
	n = min(max(n, 0), len(p.weights)-p.k)
	p.weights = p.weights[:len(p.weights)-n]
}

// finish says how long the whole benchmark took.
func (p *progress) finish(name string) {
	fmt.Fprintf(p.w, "spate bench %s: %d runs in %s\n", name, len(p.weights), p.now().Sub(p.began).Round(time.Second))
}
