package backup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"spate/job"
)

func spillFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// fill appends n records to each of kgs from p, after what the model has.
func fill(t *testing.T, b *Buffer, m *model, p job.Producer, kgs []job.KeyGroup, n int) {
	t.Helper()
	for range n {
		for _, kg := range kgs {
			seq := m.get(p, kg).high + 1
			if err := b.Append(p, kg, seq, testRec(p, kg, seq)); err != nil {
				t.Fatal(err)
			}
			m.append(p, kg, seq)
		}
	}
}

func TestSpillAndReplay(t *testing.T) {
	dir := t.TempDir()
	b := mustNew(t, Config{MemLimit: 64 << 10, SpillDir: dir})
	m := newModel()
	kgs := []job.KeyGroup{0, 1, 2, 3}

	fill(t, b, m, 1, kgs, 1500)
	if st := b.Stats(); st.Spilling || len(spillFiles(t, dir)) != 0 {
		t.Fatalf("spilled unmarked records: %+v", st)
	}
	if !b.Full() || !b.Stats().Full {
		t.Fatal("over the limit with nothing marked, but not Full")
	}
	b.Mark()
	if b.Full() {
		t.Fatal("still Full right after Mark: Append should get to spill")
	}
	fill(t, b, m, 2, kgs, 10)
	st := b.Stats()
	if !st.Spilling || st.SpillFiles == 0 || int(st.SpillFiles) != len(spillFiles(t, dir)) {
		t.Fatalf("not spilling after a Mark: %+v, files %v", st, spillFiles(t, dir))
	}
	if st.MemBytes > 64<<10 {
		t.Fatalf("still %d bytes in memory after spilling", st.MemBytes)
	}
	m.check(t, b)
	replay(0, map[job.Producer]uint64{1: 1000}, seqs(1, 1001, 1500), seqs(2, 1, 10)).do(t, b)

	// A spilled chunk is read back by MarkFull, and Restore holds the same.
	full, err := b.MarkFull()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore(Config{MemLimit: 1 << 30}, [][]byte{full})
	if err != nil {
		t.Fatal(err)
	}
	sameBuffers(t, b, r)

	// Trimming everything removes every file.
	for _, kg := range kgs {
		b.Trim(1, kg, 1500)
		b.Trim(2, kg, 10)
		m.trim(1, kg, 1500)
		m.trim(2, kg, 10)
	}
	if f := spillFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left after trimming everything: %v", f)
	}
	if st := b.Stats(); st.Spilling || st.SpillBytes != 0 || st.Records != 0 {
		t.Fatalf("stats after trimming everything: %+v", st)
	}
	m.check(t, b)
}

func TestSpillCloseRemovesFiles(t *testing.T) {
	dir := t.TempDir()
	b, err := New(Config{MemLimit: 16 << 10, SpillDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	fill(t, b, m, 1, []job.KeyGroup{5}, 1000)
	b.Mark()
	fill(t, b, m, 1, []job.KeyGroup{5}, 10)
	if len(spillFiles(t, dir)) == 0 {
		t.Fatal("nothing spilled")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if f := spillFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left after Close: %v", f)
	}
}

func TestSpillCorrupted(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(path string) error
	}{
		{"flipped byte", func(path string) error {
			d, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			d[len(d)/2] ^= 0x40
			return os.WriteFile(path, d, 0o600)
		}},
		{"truncated", func(path string) error { return os.Truncate(path, 10) }},
		{"longer", func(path string) error {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte{0})
			f.Close()
			return err
		}},
		{"removed", os.Remove},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b := mustNew(t, Config{MemLimit: 16 << 10, SpillDir: dir})
			m := newModel()
			fill(t, b, m, 1, []job.KeyGroup{5}, 1000)
			b.Mark()
			fill(t, b, m, 1, []job.KeyGroup{5}, 10)
			files := spillFiles(t, dir)
			if len(files) == 0 {
				t.Fatal("nothing spilled")
			}
			if err := c.damage(files[0]); err != nil {
				t.Fatal(err)
			}
			_, err := replayAll(b, 5, nil)
			if !errors.Is(err, ErrSpill) {
				t.Fatalf("replay: %v", err)
			}
			if c.name != "removed" && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("replay of a damaged file: %v", err)
			}
			if _, err := b.MarkFull(); !errors.Is(err, ErrSpill) {
				t.Fatalf("MarkFull: %v", err)
			}
			var mp MarkParts
			if err := b.MarkFullInParts(&mp); !errors.Is(err, ErrSpill) {
				t.Fatalf("MarkFullInParts: %v", err)
			}
			mp.Seal() // a failed mark: nothing to seal
			if len(mp.Parts()) != 0 || len(mp.pinned) != 0 {
				t.Fatalf("a failed mark left %d pieces and %d pinned chunks", len(mp.Parts()), len(mp.pinned))
			}
			if _, err := b.Extract(job.Range{Lo: 0, Hi: 10}); !errors.Is(err, ErrSpill) {
				t.Fatalf("Extract: %v", err)
			}
			if len(b.KeyGroups()) != 1 {
				t.Fatal("a failed Extract moved key groups")
			}
		})
	}
}

// A spill that fails keeps the records in memory, says so, reports Full,
// and spilling resumes after the next Mark.
func TestSpillFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b := mustNew(t, Config{MemLimit: 16 << 10, SpillDir: dir})
	m := newModel()
	fill(t, b, m, 1, []job.KeyGroup{5}, 1000)
	b.Mark()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	seq := m.get(1, 5).high + 1
	err := b.Append(1, 5, seq, testRec(1, 5, seq))
	if !errors.Is(err, ErrSpill) {
		t.Fatalf("append with a missing SpillDir: %v", err)
	}
	m.append(1, 5, seq)
	if b.High(1, 5) != seq {
		t.Fatal("the record was not appended")
	}
	if !b.Full() {
		t.Fatal("not Full after a failed spill")
	}
	if st := b.Stats(); st.SpillErr == "" || !st.Full {
		t.Fatalf("stats %+v", st)
	}
	fill(t, b, m, 1, []job.KeyGroup{5}, 5) // no retry until a Mark
	m.check(t, b)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b.Mark()
	fill(t, b, m, 1, []job.KeyGroup{5}, 1)
	if st := b.Stats(); !st.Spilling || st.Full {
		t.Fatalf("spilling did not resume: %+v", st)
	}
	m.check(t, b)
}

// Under the limit nothing is spilled, and the spill queue does not grow
// with the chunks sealed and freed over time.
func TestSpillQueueBounded(t *testing.T) {
	b := mustNew(t, Config{MemLimit: 8 << 20, SpillDir: t.TempDir()})
	m := newModel()
	for round := range 200 {
		fill(t, b, m, 1, []job.KeyGroup{1, 2}, 300)
		b.Mark()
		for _, kg := range []job.KeyGroup{1, 2} {
			b.Trim(1, kg, m.get(1, kg).high-10)
			m.trim(1, kg, m.get(1, kg).high-10)
		}
		if n := len(b.sealed) - b.qhead; n > 200 {
			t.Fatalf("round %d: %d chunks queued", round, n)
		}
	}
	if st := b.Stats(); st.Spilling {
		t.Fatalf("spilled under the limit: %+v", st)
	}
	m.check(t, b)
}
