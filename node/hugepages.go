package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"spate/internal/race"
)

// Huge pages (doc.go, "Memory"). A node's state is hundreds of megabytes
// read at random, and its heap grows while the state fills: on a virtual
// machine every 4 KiB page touched for the first time costs a fault of
// several microseconds, and every random read a walk of the page tables.
// Where the kernel backs only the regions that ask for it with
// transparent huge pages (THP mode "madvise", the common default), a node
// asks for them over its heap:
//
//   - at start it allocates reserveSize() bytes, untouched (the runtime
//     maps them and knows them zero), advises every anonymous read-write
//     mapping of the process, and gives them back: the heap reuses those
//     addresses, and the advice belongs to the mapping, so it outlives
//     the runtime's returning of free pages to the kernel;
//   - then, every hugeEvery, it advises the mappings the heap has grown
//     by since.
//
// Modes "always" and "never" leave nothing to do; SPATE_HUGEPAGES=off in
// the environment turns it off, as does a build with the race detector.

// hugeReserve is how much of the heap's address space a node advises
// before it allocates anything else (reserveSize).
const hugeReserve = 1 << 30

// reserveSize is how much heap a node reserves to advise at start:
// hugeReserve, at most an eighth of the machine's memory, and none where
// the kernel does not overcommit (a reservation there is memory taken,
// and one the kernel refuses stops the process).
func reserveSize() int {
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err != nil || strings.TrimSpace(string(b)) == "2" {
		return 0
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	total, ok := memTotal(b)
	if !ok {
		return 0
	}
	return int(min(hugeReserve, total/8)) &^ (hugeMin - 1)
}

// memTotal reads MemTotal, in bytes, from a /proc/meminfo text.
func memTotal(meminfo []byte) (uint64, bool) {
	for _, line := range strings.Split(string(meminfo), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, false
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// hugeEvery is how often a node looks for new mappings to advise.
const hugeEvery = time.Second

// hugeMin is the smallest mapping worth advising: one huge page.
const hugeMin = 2 << 20

// thpMode reads the kernel's transparent huge page mode ("always",
// "madvise", "never"; "" if it has none).
func thpMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	return bracketed(string(b))
}

// bracketed returns the word of a sysfs choice list marked as chosen:
// "always [madvise] never" → "madvise".
func bracketed(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// anonRange is a mapping of /proc/self/maps: [Lo, Hi).
type anonRange struct{ Lo, Hi uint64 }

// anonMappings returns the anonymous private read-write mappings of a
// /proc/PID/maps text that can hold a huge page. A line it cannot read is
// an error naming it: the format is the kernel's, so that is a bug here.
func anonMappings(maps []byte) ([]anonRange, error) {
	var out []anonRange
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for n := 1; sc.Scan(); n++ {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 {
			return nil, fmt.Errorf("maps:%d: %d fields, want at least 5", n, len(f))
		}
		if len(f) != 5 || string(f[1]) != "rw-p" || string(f[4]) != "0" {
			continue // a file, a named region ([stack], [heap]), or not read-write private
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			return nil, fmt.Errorf("maps:%d: address range %q", n, f[0])
		}
		l, err1 := strconv.ParseUint(string(lo), 16, 64)
		h, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || h < l {
			return nil, fmt.Errorf("maps:%d: address range %q", n, f[0])
		}
		if h-l >= hugeMin {
			out = append(out, anonRange{l, h})
		}
	}
	return out, sc.Err()
}

// hugeAdviser advises the process's mappings, each once.
type hugeAdviser struct {
	done map[anonRange]bool // the mappings advised, as they were last seen
}

// advise advises every mapping of the process not advised yet; it returns
// how many bytes it advised this time.
func (a *hugeAdviser) advise() (uint64, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	rs, err := anonMappings(maps)
	if err != nil {
		return 0, err
	}
	return a.adviseRanges(rs)
}

// adviseRanges advises those of rs not advised before, and forgets the
// mappings that are gone (the kernel merges and splits them as the heap
// grows and as they are advised).
func (a *hugeAdviser) adviseRanges(rs []anonRange) (uint64, error) {
	now := make(map[anonRange]bool, len(rs))
	var n uint64
	for _, r := range rs {
		if !a.done[r] {
			if err := madviseHuge(r.Lo, r.Hi-r.Lo); err != nil {
				return n, fmt.Errorf("madvise %#x-%#x: %w", r.Lo, r.Hi, err)
			}
			n += r.Hi - r.Lo
		}
		now[r] = true
	}
	a.done = now
	return n, nil
}

// adviseHugePages runs the advice (above) until ctx ends; it returns at
// once where there is nothing to do. logf reports what it did, once, and
// an error, once: the node runs as well without huge pages.
func adviseHugePages(ctx context.Context, logf func(string, ...any)) {
	if v := os.Getenv("SPATE_HUGEPAGES"); v == "off" || v == "0" || v == "false" {
		return
	}
	if race.Enabled || thpMode() != "madvise" {
		return // (the race detector's shadow memory is anonymous too: never advised)
	}
	a := &hugeAdviser{done: map[anonRange]bool{}}
	var reserve []byte
	if size := reserveSize(); size > 0 {
		reserve = make([]byte, size)
	}
	n, err := a.advise()
	runtime.KeepAlive(reserve)
	if reserve != nil {
		debug.FreeOSMemory() // the reserve back before anything else is allocated
	}
	if err != nil {
		logf("transparent huge pages not advised: %v", err)
		return
	}
	logf("transparent huge pages advised over %d MiB of heap", n>>20)
	go func() {
		t := time.NewTicker(hugeEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := a.advise(); err != nil {
					logf("transparent huge pages: %v; no more advice", err)
					return
				}
			}
		}
	}()
}
