package node

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestBracketed(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never\n": "madvise",
		"[always] madvise never":   "always",
		"always madvise [never]":   "never",
		"":                         "",
		"always madvise never":     "",
	} {
		if got := bracketed(in); got != want {
			t.Errorf("bracketed(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMemTotal(t *testing.T) {
	if got, ok := memTotal([]byte("MemTotal:       24683784 kB\nMemFree:        15761344 kB\n")); !ok || got != 24683784<<10 {
		t.Errorf("memTotal = %d, %v; want %d", got, ok, uint64(24683784)<<10)
	}
	for _, bad := range []string{"", "MemFree: 1 kB\n", "MemTotal: 12 MB\n", "MemTotal: x kB\n"} {
		if got, ok := memTotal([]byte(bad)); ok {
			t.Errorf("memTotal(%q) = %d, want none", bad, got)
		}
	}
}

func TestAnonMappings(t *testing.T) {
	maps := `00400000-00c00000 r-xp 00000000 fd:00 1234 /usr/bin/spate
01913000-03961000 rw-p 00000000 00:00 0
32646000-32667000 rw-p 00000000 00:00 0                                  [heap]
c000000000-c000400000 rw-p 00000000 00:00 0
c000400000-c004000000 ---p 00000000 00:00 0
c004000000-c004100000 rw-p 00000000 00:00 0
7efe097fc000-7efe09ffc000 rw-p 00000000 00:00 0
7efe0a000000-7efe0a400000 rw-s 00000000 00:05 99 /dev/zero (deleted)
7ffd1c000000-7ffd1c400000 rw-p 00000000 00:00 0                          [stack]
`
	got, err := anonMappings([]byte(maps))
	if err != nil {
		t.Fatal(err)
	}
	want := []anonRange{{0x01913000, 0x03961000}, {0xc000000000, 0xc000400000}, {0x7efe097fc000, 0x7efe09ffc000}}
	if len(got) != len(want) {
		t.Fatalf("got %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %x, want %x", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"c000000000 rw-p 00000000 00:00 0\n", "x-c000400000 rw-p 00000000 00:00 0\n", "c000400000-c000000000 rw-p 00000000 00:00 0\n", "c000000000-c000400000 rw-p\n"} {
		if _, err := anonMappings([]byte("00400000-00c00000 r-xp 00000000 fd:00 1234 /usr/bin/spate\n" + bad)); err == nil || !strings.Contains(err.Error(), "maps:2:") {
			t.Errorf("%q: error %v, want one naming maps:2", bad, err)
		}
	}
}

// TestAdviseMarksTheHeap allocates a heap object of many huge pages,
// advises the mappings that hold it (those only: under the race
// detector the process's other anonymous mappings are its shadow memory)
// and checks that the kernel lists it as asking for huge pages ("hg"
// among its VmFlags), once.
func TestAdviseMarksTheHeap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	if thpMode() == "" {
		t.Skip("no transparent huge pages in this kernel")
	}
	b := make([]byte, 64<<20)
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	rs, err := anonMappings(maps)
	if err != nil {
		t.Fatal(err)
	}
	end := addr + uint64(len(b))
	var held []anonRange // the mappings the allocation lies in (one, unless the kernel kept two apart)
	var size, covered uint64
	for _, r := range rs {
		if r.Lo < end && addr < r.Hi {
			held = append(held, r)
			size += r.Hi - r.Lo
			covered += min(r.Hi, end) - max(r.Lo, addr)
		}
	}
	if covered != uint64(len(b)) {
		t.Fatalf("the mappings %x cover %d bytes of the allocation at %#x, want all %d", held, covered, addr, len(b))
	}
	a := &hugeAdviser{done: map[anonRange]bool{}}
	n, err := a.adviseRanges(held)
	if err != nil {
		t.Fatal(err)
	}
	if n != size {
		t.Fatalf("advised %d bytes, want the mappings' %d", n, size)
	}
	if again, err := a.adviseRanges(held); err != nil || again != 0 {
		t.Fatalf("advised again %d bytes (%v): a mapping is advised once", again, err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	flags, ok := vmFlagsAt(smaps, addr)
	if !ok {
		t.Fatalf("no mapping holds %#x", addr)
	}
	if !bytes.Contains(flags, []byte(" hg")) {
		t.Fatalf("the mapping of %#x has VmFlags%s: no hg", addr, flags)
	}
	runtime.KeepAlive(b)
}

func TestAdviseForgetsWhatIsGone(t *testing.T) {
	a := &hugeAdviser{done: map[anonRange]bool{{1 << 21, 2 << 21}: true, {4 << 21, 5 << 21}: true}}
	if n, err := a.adviseRanges([]anonRange{{1 << 21, 2 << 21}}); err != nil || n != 0 {
		t.Fatalf("advised %d bytes (%v), want none: the one range was advised", n, err)
	}
	if len(a.done) != 1 || !a.done[anonRange{1 << 21, 2 << 21}] {
		t.Fatalf("remembers %v, want the one range still mapped", a.done)
	}
}

// vmFlagsAt returns the VmFlags line of the /proc/self/smaps mapping that
// holds addr.
func vmFlagsAt(smaps []byte, addr uint64) ([]byte, bool) {
	in := false
	for _, line := range bytes.Split(smaps, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmFlags:")); ok {
			if in {
				return rest, true
			}
			continue
		}
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue // a field of the mapping above
		}
		l, err1 := strconv.ParseUint(string(lo), 16, 64)
		h, err2 := strconv.ParseUint(string(hi), 16, 64)
		in = err1 == nil && err2 == nil && l <= addr && addr < h
	}
	return nil, false
}
