package state_test

import (
	"os"
	"path/filepath"
	"testing"

	"spate/state"
	"spate/state/storetest"
)

func TestStoreContract(t *testing.T) {
	t.Run("dir", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			dir := filepath.Join(t.TempDir(), "ckpt")
			s, err := state.NewDirStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			return storetest.Harness{Store: s,
				Corrupt: func(name string) error { return flipByte(filepath.Join(dir, filepath.FromSlash(name))) },
				Reopen: func() state.Store {
					s, err := state.NewDirStore(dir)
					if err != nil {
						t.Fatal(err)
					}
					return s
				}}
		})
	})
	t.Run("mem", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Harness {
			m := state.NewMemStore()
			return storetest.Harness{Store: m, Corrupt: m.Corrupt}
		})
	})
}

// flipByte damages the middle of a file in place, as a bad disk would.
func flipByte(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0x10
	return os.WriteFile(path, b, 0o644)
}
