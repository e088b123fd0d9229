package tour

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"spate/control"
	"spate/coord"
	"spate/events"
	"spate/tui"
)

//go:embed lesson.md
var lessonText []byte

// Lesson is the tour's lesson, parsed from lesson.md.
func Lesson() (*tui.Lesson, error) { return tui.ParseLesson("tour/lesson.md", lessonText) }

// Main is spate tour [--headless] [--data DIR] [--nodes N] [--rate R]
// [--keys K] [--wait D]; headless too when stdout is not a terminal. It returns the exit code: 0 when the run
// verified, 1 when the cluster failed or the output is wrong, 2 for bad
// flags.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spate tour", flag.ContinueOnError)
	fs.SetOutput(stderr)
	headless := fs.Bool("headless", false, "print the lesson with its live figures instead of the dashboard")
	data := fs.String("data", "", "the run directory (default ./spate-data/RUN-ID)")
	nodes := fs.Int("nodes", 3, "worker processes")
	rate := fs.Int("rate", 20000, "records per second")
	keys := fs.Int("keys", 2000, "distinct keys")
	wait := fs.Duration("wait", 30*time.Second, "headless: how long a step waits for its event")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "spate tour: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	lesson, err := Lesson()
	if err != nil {
		fmt.Fprintln(stderr, "spate tour:", err)
		return 2
	}
	up := []string{"--nodes", strconv.Itoa(*nodes), "--rate", strconv.Itoa(*rate), "--keys", strconv.Itoa(*keys),
		"--duration", "0", "--headless",
		// A failure a minute, for the tuner: intervals short enough that
		// checkpoints and trims show within a step.
		"--failures", "poisson:1m"}
	base := append([]string(nil), up...)
	if *data != "" {
		up = append(up, "--data", *data)
	}
	cfg, err := coord.ParseUp(up, io.Discard)
	if err != nil {
		fmt.Fprintln(stderr, "spate tour:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	upCtx, cancelUp := context.WithCancel(ctx)
	defer cancelUp()

	kill := killOf(lesson)
	al := newAligner(strings.Replace(kill.Target, "/", "#", 1))
	here := &syncFigures{f: tui.NewFigures()}
	cl := start(upCtx, cfg, func(e events.Event) { al.observe(e); here.add(e) })
	var dir string
	select {
	case dir = <-cl.started:
	case err := <-cl.done:
		fmt.Fprintln(stderr, "spate tour:", err)
		return 1
	}
	evc, done := cl.events, cl.done
	client, err := control.Dial(dir)
	ctl := &alignedControl{Controller: client, ctx: upCtx, a: al, kill: kill}
	cmp := &comparisons{base: base, dir: dir, kill: kill, aligned: ctl.aligned, here: here}
	if err == nil {
		if *headless || !tui.IsTerminal(stdout) {
			err = tui.LessonHeadless(ctx, lesson, evc, ctl, cmp.comparer(upCtx), stdout, *wait)
		} else {
			err = tui.Run(ctx, tui.Options{Events: evc, Control: ctl, Now: time.Now, In: os.Stdin, Out: stdout,
				Title: "tour " + filepath.Base(dir), RunDir: dir, Lesson: lesson, Compare: cmp.comparer(upCtx)})
		}
	}
	cancelUp() // the job drains, and so does a comparison still running
	cmp.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "spate tour:", err)
	}
	if err := <-done; err != nil {
		fmt.Fprintln(stderr, "spate tour: the cluster:", err)
		return 1
	}
	fmt.Fprintf(stdout, "the job drained; data in %s\n", dir)
	rep, err := coord.VerifyRun(dir)
	if err != nil {
		fmt.Fprintln(stderr, "spate tour: verify:", err)
		return 1
	}
	fmt.Fprintln(stdout, rep.String())
	if !rep.OK() {
		return 1
	}
	return 0
}

// killOf is the lesson's first kill (a step's do: kill ...), which a
// comparison does again on its own cluster; kill count#0 if it has none.
func killOf(l *tui.Lesson) control.Action {
	for _, st := range l.Steps {
		if st.Do != nil && st.Do.Verb == "kill" {
			return *st.Do
		}
	}
	return control.Action{Verb: "kill", Target: "count#0"}
}

// syncFigures is a fold of a cluster's figures that the bus feeds and a
// comparison reads.
type syncFigures struct {
	mu sync.Mutex
	f  *tui.Figures
}

func (s *syncFigures) add(e events.Event) {
	s.mu.Lock()
	s.f.Add(e)
	s.mu.Unlock()
}

func (s *syncFigures) recovery(victim string) (tui.RecoveryNumbers, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Recovery(victim)
}

// cluster is a cluster the tour started: its events (closed when it has
// drained), its run directory once it runs, and coord.Up's error.
type cluster struct {
	events  <-chan events.Event
	started <-chan string
	done    <-chan error
}

// start starts a cluster as spate up does, until ctx ends. The lesson
// and a comparison wait for lifecycle events: a deep buffer, and a lossy
// hand-over so that the run is never held up by them. observe, if not
// nil, sees every event first, on the bus: it must not block.
func start(ctx context.Context, cfg coord.Config, observe func(events.Event)) cluster {
	evc := make(chan events.Event, 1<<16)
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := coord.Up(ctx, cfg, coord.Options{
			Out:     io.Discard,
			Started: func(dir string) { started <- dir },
			Observe: func(e events.Event) {
				if observe != nil {
					observe(e)
				}
				select {
				case evc <- e:
				default:
				}
			},
		})
		close(evc)
		done <- err
	}()
	return cluster{events: evc, started: started, done: done}
}
