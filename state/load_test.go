package state

import (
	"errors"
	"fmt"
	"testing"
)

// TestLoadFallsBack writes a chain through Put, corrupts the latest file and
// checks that Load of it fails with ErrCorrupt while the previous
// checkpoint still loads.
func TestLoadFallsBack(t *testing.T) {
	eachStore(t, func(t *testing.T, s Store) {
		tab := NewTable(cloneT)
		m := model{}
		var chain []*Snapshot
		var models []model
		for id := uint64(1); id <= 4; id++ {
			for i := range 30 {
				kg, key := i%3, fmt.Appendf(nil, "k%d", (int(id)*7+i)%40)
				e, _ := tab.Upsert(kg, key)
				bump(e, int64(id))
				m.set(kg, string(key), e.Val())
			}
			full := id == 1
			snap := &Snapshot{Instance: "op#3", Gen: 2, ID: id, Full: full, Base: 1,
				Groups: EncodeCapture(tab.Capture(full), encT, nil)}
			if !full {
				snap.Parent = id - 1
			}
			name, size, err := Put(s, snap)
			if err != nil {
				t.Fatal(err)
			}
			if name != FileName("op#3", 2, id, full) || size <= HeaderSize {
				t.Fatalf("Put: %s, %d bytes", name, size)
			}
			chain = append(chain, snap)
			models = append(models, m.clone())
		}
		for i, snap := range chain {
			got, err := Load(s, Ref{"op#3", 2, snap.ID, snap.Full})
			if err != nil {
				t.Fatal(err)
			}
			if d := models[i].normalize().diff(fromSnapshot(t, got)); d != "" {
				t.Fatalf("checkpoint %d:\n%s", snap.ID, d)
			}
		}

		// Corrupt checkpoint 4: it fails, 3 still loads.
		name := FileName("op#3", 2, 4, false)
		b, _ := s.Get(name)
		b[len(b)-3] ^= 0xff
		if err := s.Put(name, b); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(s, Ref{"op#3", 2, 4, false}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Load of a corrupt checkpoint: %v", err)
		}
		if _, err := Load(s, Ref{"op#3", 2, 3, false}); err != nil {
			t.Fatalf("Load of the previous checkpoint: %v", err)
		}

		// A file under the wrong name is corrupt too.
		b, _ = s.Get(FileName("op#3", 2, 2, false))
		if err := s.Put(FileName("op#3", 2, 5, false), b); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(s, Ref{"op#3", 2, 5, false}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Load of a misnamed file: %v", err)
		}
		// and a missing one breaks the chain
		if _, err := Load(s, Ref{"op#3", 2, 9, false}); !errors.Is(err, ErrBrokenChain) {
			t.Fatalf("Load of a missing checkpoint: %v", err)
		}
	})
}
