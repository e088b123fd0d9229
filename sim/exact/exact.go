package exact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// GuestPackage is the main package the exact mode runs, relative to the
// module's root.
const GuestPackage = "./sim/guest"

// Every is how many calls of the mutex's Lock a goroutine of the guest
// makes between two preemptions.
const Every = 4096

// epoch is the guest's wall clock at its start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// lockName is the guest's mutex Lock as the wasm name section spells it.
const lockName = ".internal_sync.__Mutex_.Lock"

// stackPreempt is the runtime's stack guard that makes a goroutine's next
// function call yield (runtime/stack.go), and guardOffset where the stack
// guard sits in a g on wasm (after the stack's two bounds).
const (
	stackPreempt = 0xfffffffffffffade
	guardOffset  = 16
	gGlobal      = 2 // the wasm global that holds g (cmd/link/internal/wasm)
)

// Source finds the root of spate's source tree: $SPATE_SRC, the first
// directory from dir upward whose go.mod declares module spate, or the
// tree this binary was built from if it is still there.
func Source(dir string) (string, error) {
	if s := os.Getenv("SPATE_SRC"); s != "" {
		if !isSpate(s) {
			return "", fmt.Errorf("SPATE_SRC=%s: no go.mod of module spate there", s)
		}
		return s, nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		if isSpate(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			if _, file, _, ok := runtime.Caller(0); ok {
				if built := filepath.Join(filepath.Dir(file), "..", ".."); isSpate(built) {
					return filepath.Clean(built), nil
				}
			}
			return "", fmt.Errorf("the exact mode builds its guest from spate's source, and found no go.mod of module spate from %s up: run it in a clone, set SPATE_SRC, or pass --native", dir)
		}
	}
}

func isSpate(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(first) == "module spate"
}

// Build builds the guest from src with the go command (GOOS=wasip1
// GOARCH=wasm) into cache and returns its bytes and whether they changed
// since the last build there. The go command's own cache makes a build
// of an unchanged tree take about a second.
func Build(ctx context.Context, src, cache string) (wasm []byte, changed bool, err error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, serr := os.Stat(gobin); serr != nil {
			return nil, false, fmt.Errorf("the exact mode builds its guest with the go command, and found none (%v)", err)
		}
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, false, err
	}
	out := filepath.Join(cache, "guest.wasm")
	old, _ := os.ReadFile(out)
	f, err := os.CreateTemp(cache, "guest-*.wasm")
	if err != nil {
		return nil, false, err
	}
	f.Close()
	tmp := f.Name()
	defer os.Remove(tmp)
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", tmp, GuestPackage)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, false, fmt.Errorf("building the guest (GOOS=wasip1 go build %s in %s): %v\n%s", GuestPackage, src, err, b)
	}
	wasm, err = os.ReadFile(tmp)
	if err != nil {
		return nil, false, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, false, err
	}
	return wasm, !bytes.Equal(old, wasm), nil
}

// Host is a compiled guest, ready to run any number of times, also at
// once.
type Host struct {
	rt  wazero.Runtime
	mod wazero.CompiledModule
	// Hash is the guest's sha256: a run is a function of it and its Spec.
	Hash string
}

// New compiles wasm, caching the machine code under cache (the first
// compile of a guest takes some seconds, a cached one well under one).
func New(ctx context.Context, wasm []byte, cache string) (*Host, error) {
	cc, err := wazero.NewCompilationCacheWithDir(filepath.Join(cache, "wazero"))
	if err != nil {
		return nil, err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cc).WithCloseOnContextDone(true))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	f := &factory{}
	mod, err := rt.CompileModule(experimental.WithFunctionListenerFactory(ctx, f), wasm)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("compiling the guest: %v", err)
	}
	if !f.found {
		rt.Close(ctx)
		return nil, fmt.Errorf("the guest has no function %s to preempt at: built by a Go whose runtime the exact mode does not know", lockName)
	}
	sum := sha256.Sum256(wasm)
	return &Host{rt: rt, mod: mod, Hash: fmt.Sprintf("%x", sum[:8])}, nil
}

// Close frees the compiled guest.
func (h *Host) Close(ctx context.Context) error { return h.rt.Close(ctx) }

// Spec is one run of the guest.
type Spec struct {
	Args   []string // the guest's arguments (its argv[1:])
	Seed   uint64   // keys the random source
	Mounts []Mount  // the host directories the guest sees
	Stdout io.Writer
	Stderr io.Writer
}

// Mount is a host directory and where the guest sees it.
type Mount struct{ Host, Guest string }

// Stats is what the host saw of a run.
type Stats struct {
	Exit     int           // the guest's exit code
	Virtual  time.Duration // the virtual clock at the end
	Preempts int64         // preemptions the host asked for
}

// Run runs the guest once, to its exit.
func (h *Host) Run(ctx context.Context, s Spec) (Stats, error) {
	fsc := wazero.NewFSConfig()
	for _, m := range s.Mounts {
		if err := os.MkdirAll(m.Host, 0o755); err != nil {
			return Stats{}, err
		}
		fsc = fsc.WithDirMount(m.Host, m.Guest)
	}
	st := &runState{clock: 1}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], s.Seed)
	copy(key[8:], "spate exact mode")
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(append([]string{"guest"}, s.Args...)...).
		WithEnv("GOGC", "400").
		WithStdout(orDiscard(s.Stdout)).
		WithStderr(orDiscard(s.Stderr)).
		WithFSConfig(fsc).
		WithRandSource(rand.NewChaCha8(key)).
		WithWalltime(func() (int64, int32) {
			n := epoch + st.clock
			return n / 1e9, int32(n % 1e9)
		}, sys.ClockResolution(1)).
		WithNanotime(func() int64 { return st.clock }, sys.ClockResolution(1)).
		WithNanosleep(func(ns int64) { st.clock += max(ns, 1) }).
		WithOsyield(func() {})
	_, err := h.rt.InstantiateModule(context.WithValue(ctx, stateKey{}, st), h.mod, cfg)
	stats := Stats{Virtual: time.Duration(st.clock), Preempts: st.preempts}
	var exit *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		stats.Exit = int(exit.ExitCode())
		if ctx.Err() != nil {
			return stats, ctx.Err()
		}
	default:
		return stats, err
	}
	return stats, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// runState is one run's clock and preemption count, reached by the
// listener through the run's context.
type runState struct {
	clock    int64
	locks    int64
	preempts int64
}

type stateKey struct{}

// factory attaches the preemption to the guest's mutex Lock.
type factory struct{ found bool }

func (f *factory) NewFunctionListener(d api.FunctionDefinition) experimental.FunctionListener {
	if d.DebugName() != lockName {
		return nil
	}
	f.found = true
	return preempter{}
}

// preempter marks the running goroutine for preemption every Every-th
// Lock: the guest is single-threaded, so the count, and with it every
// switch, is the same in every run.
type preempter struct{}

func (preempter) Before(ctx context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	st, _ := ctx.Value(stateKey{}).(*runState)
	if st == nil {
		return
	}
	st.locks++
	if st.locks%Every != 0 {
		return
	}
	im, ok := mod.(experimental.InternalModule)
	if !ok {
		return
	}
	g := uint32(im.Global(gGlobal).Get())
	if g != 0 && mod.Memory().WriteUint64Le(g+guardOffset, stackPreempt) {
		st.preempts++
	}
}

func (preempter) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (preempter) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}
