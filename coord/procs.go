package coord

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"spate/events"
)

// NodeProc is a node process of a run.
type NodeProc struct {
	Name string
	PID  int
}

// LiveNodes are the node processes the run in dir spawned (node_spawned
// in its events.jsonl) that still run. A pid counts only while /proc
// shows it as this run's node (`spate node --name NAME --coord ADDR`,
// the address in run.json), so a reused pid is never taken for one;
// without /proc there are none. A run directory a crash left half
// written is still read: only run.json's address is needed, and an event
// line that does not decode (one cut short by a killed coordinator) is
// passed over.
func LiveNodes(dir string) []NodeProc {
	var ri struct {
		Coord string `json:"coord"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil || json.Unmarshal(b, &ri) != nil || ri.Coord == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	names := events.Names{}
	var out []NodeProc
	seen := map[int]bool{}
	for sc.Scan() {
		e, err := events.DecodeLine(sc.Bytes(), names)
		if err != nil {
			continue
		}
		sp, ok := e.Fields.(events.NodeSpawnedFields)
		if !ok || sp.PID <= 0 || seen[sp.PID] {
			continue
		}
		seen[sp.PID] = true
		if isRunNode(sp.PID, e.Node, ri.Coord) {
			out = append(out, NodeProc{Name: e.Node, PID: sp.PID})
		}
	}
	return out
}

// isRunNode reports whether pid is a live (not zombie) `spate node`
// process named name, of the coordinator at coordAddr.
func isRunNode(pid int, name, coordAddr string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) < 2 || args[1] != "node" || !slices.Contains(args, name) || !slices.Contains(args, coordAddr) {
		return false
	}
	dead, known := ProcDead(pid)
	return known && !dead
}

// ProcDead reads /proc/PID/stat: the process is dead once it is a zombie
// (Z), dead (X) or gone. known is false where the file cannot be read for
// another reason (no /proc).
func ProcDead(pid int) (dead, known bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		_, perr := os.Stat("/proc/self/stat")
		return perr == nil, perr == nil
	}
	if err != nil {
		return false, false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false, false
	}
	s := b[i+2]
	return s == 'Z' || s == 'X', true
}
