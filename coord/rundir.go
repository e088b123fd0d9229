package coord

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"

	"spate/job"
	"spate/stores"
)

// DefaultRoot is where run directories go unless --data says otherwise.
const DefaultRoot = "spate-data"

// RunInfo is run.json: the resolved configuration and, once the run has
// drained, how far each source partition was read. Together they fix the
// oracle's input exactly.
type RunInfo struct {
	Run       string         `json:"run"`
	Started   time.Time      `json:"started"`
	JobStart  *time.Time     `json:"job_started,omitempty"` // sources began
	Resumed   []time.Time    `json:"resumed,omitempty"`     // when a new coordinator took the run over (spate up --resume)
	Finished  *time.Time     `json:"finished,omitempty"`    // every instance drained
	Config    Config         `json:"config"`
	Job       job.Spec       `json:"job"`
	Coord     string         `json:"coord,omitempty"` // the coordinator's address
	TLS       bool           `json:"tls,omitempty"`   // every link is TLS 1.3 with the run's CA (tls.go)
	Positions map[int]uint64 `json:"positions,omitempty"`
	Complete  bool           `json:"complete"`             // every source partition reported its final position
	Lag       [][2]int64     `json:"lag_ms,omitempty"`     // paced runs: (ms since the job started, output lag in ms), every heartbeat period
	NodeCPU   float64        `json:"node_cpu_s,omitempty"` // CPU seconds the node processes used, as last reported
	// StoreTraffic is what the coordinator store's streams carried, every
	// node's and space's (stores.Server.Traffic); absent when no node used it.
	StoreTraffic *stores.Traffic `json:"store_traffic,omitempty"`
	// Provenance is what made the run: the binary, the toolchain, the
	// machine and the command line. WriteRunInfo fills it in the first
	// time (NewProvenance).
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Version is the version of this binary, as run.json records it; the
// command line sets it once at start, from the one set at build time.
var Version = "0.1.0-dev"

// Provenance says which code, toolchain and machine made a run, so that
// a figure can be traced to them.
type Provenance struct {
	Version    string   `json:"version"`
	Commit     string   `json:"commit,omitempty"`      // vcs.revision of the build, when built from a checkout
	CommitTime string   `json:"commit_time,omitempty"` // vcs.time
	Modified   bool     `json:"modified,omitempty"`    // vcs.modified: the checkout had uncommitted changes
	Go         string   `json:"go"`                    // the toolchain that built the binary
	OS         string   `json:"os"`
	Arch       string   `json:"arch"`
	CPU        string   `json:"cpu,omitempty"` // the model, from /proc/cpuinfo
	CPUs       int      `json:"cpus"`          // logical CPUs this process may use
	Args       []string `json:"args"`          // the command line, program name first
}

// NewProvenance describes this process: Version, the build's vcs
// settings (runtime/debug.ReadBuildInfo, absent under -buildvcs=false),
// the Go version, OS and architecture, the CPU model and count, os.Args.
func NewProvenance() Provenance {
	p := Provenance{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPU: cpuModel("/proc/cpuinfo"), CPUs: runtime.NumCPU(), Args: append([]string(nil), os.Args...)}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				p.Commit = kv.Value
			case "vcs.time":
				p.CommitTime = kv.Value
			case "vcs.modified":
				p.Modified = kv.Value == "true"
			}
		}
	}
	return p
}

// cpuModel is the first "model name" of a cpuinfo file ("" if none).
func cpuModel(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// NewRunID returns a fresh run id: time plus random suffix.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// NewToken returns a fresh cluster token: a random (version 4) UUID.
func NewToken() string { return uuid.NewString() }

// CreateRunDir makes the run directory (and, for the default location, the
// spate-data/latest link) and writes the token.
func CreateRunDir(dir, run, token string) (string, error) {
	if dir == "" {
		dir = filepath.Join(DefaultRoot, run)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		link := filepath.Join(DefaultRoot, "latest")
		_ = os.Remove(link)
		_ = os.Symlink(run, link)
	} else if err := checkFresh(dir); err != nil {
		return "", err
	}
	for _, sub := range []string{"", "output", "logs", "checkpoints"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", err
		}
	}
	if err := WriteFileAtomic(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs, nil
}

// checkFresh refuses a run directory that holds an earlier run: its sink
// output would be read as this run's (verify counted an earlier run's
// files as duplicates), and its run.json overwritten.
func checkFresh(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err == nil {
		return fmt.Errorf("--data %s: holds an earlier run (run.json); give an empty or new directory", dir)
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "output", "*.jsonl")); len(old) > 0 {
		return fmt.Errorf("--data %s: holds an earlier run's output (%s); give an empty or new directory", dir, filepath.Base(old[0]))
	}
	return nil
}

// WriteFileAtomic writes data to a temporary name, syncs it and renames it
// over path.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteRunInfo writes run.json atomically; the first time, it sets
// ri.Provenance to this process's.
func WriteRunInfo(dir string, ri *RunInfo) error {
	if ri.Provenance == nil {
		p := NewProvenance()
		ri.Provenance = &p
	}
	b, err := ri.encode()
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, "run.json"), b, 0o644)
}

// encode is run.json's bytes.
func (ri *RunInfo) encode() ([]byte, error) {
	b, err := json.MarshalIndent(ri, "", "  ")
	return append(b, '\n'), err
}

// ReadRunInfo reads DIR/run.json; errors name the file.
func ReadRunInfo(dir string) (*RunInfo, error) {
	path := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no run.json: not a run directory", dir)
		}
		return nil, err
	}
	var ri RunInfo
	if err := json.Unmarshal(b, &ri); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if err := ri.Job.Validate(); err != nil {
		return nil, fmt.Errorf("%s: job: %v", path, err)
	}
	return &ri, nil
}

// ResolveDataDir finds the run directory of a command that acts on a run:
// --data if given, else the newest run (spate-data/latest).
func ResolveDataDir(data string) (string, error) {
	if data != "" {
		return data, nil
	}
	link := filepath.Join(DefaultRoot, "latest")
	target, err := os.Readlink(link)
	if err != nil {
		return "", fmt.Errorf("no --data given and no %s: start a run with `spate up` first", link)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(DefaultRoot, target)
	}
	return target, nil
}

// ReadToken reads the cluster token of a run directory.
func ReadToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return "", err
	}
	s := string(b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s, nil
}
