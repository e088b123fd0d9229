package node

import (
	"bytes"
	"testing"

	"spate/state"
	"spate/wire"
)

// Two damages of one file never undo each other: each the coordinator
// orders changes its own byte (Nth), and one byte damaged twice is still
// not what it was (a XOR of the middle byte, twice, gave the file back).
func TestTwoDamagesOfOneFileLeaveItDamaged(t *testing.T) {
	for _, nth := range [][2]int{{0, 1}, {3, 3}} {
		st := &faultStore{Store: state.NewMemStore()}
		name := "count#0/g00000001-c000000001-full.ckpt"
		orig := bytes.Repeat([]byte{7}, 64)
		if err := st.Put(name, append([]byte(nil), orig...)); err != nil {
			t.Fatal(err)
		}
		for _, n := range nth {
			got, err := st.damage(wire.Damage{Instance: "count#0", Nth: n}) // "": the newest file
			if err != nil || got != name {
				t.Fatalf("damage %d: %q, %v", n, got, err)
			}
		}
		data, err := st.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		diff := 0
		for i := range data {
			if data[i] != orig[i] {
				diff++
			}
		}
		want := 2
		if nth[0] == nth[1] {
			want = 1
		}
		if diff != want {
			t.Fatalf("damages %v: %d bytes differ, want %d", nth, diff, want)
		}
	}
}
