package node

import "testing"

func TestPayloadClasses(t *testing.T) {
	for _, c := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {4096, 0}, {4097, 1}, {8192, 1}, {64 << 10, 4},
		{64<<10 + 1, 5}, {16 << 20, 12}, {16<<20 + 1, -1},
	} {
		if got := payloadClass(c.n); got != c.class {
			t.Errorf("payloadClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
}

func TestPayloadBuffers(t *testing.T) {
	for _, n := range []int{0, 100, 4096, 5000, 70000, 16 << 20} {
		b := getPayload(n)
		if len(b) != n {
			t.Fatalf("getPayload(%d): length %d", n, len(b))
		}
		if c := payloadClass(n); cap(b) != 1<<(c+minPayloadShift) {
			t.Fatalf("getPayload(%d): capacity %d, not its class's %d", n, cap(b), 1<<(c+minPayloadShift))
		}
		putPayload(b)
	}
	// Larger than the largest class: allocated as asked, never pooled.
	if b := getPayload(16<<20 + 1); len(b) != 16<<20+1 {
		t.Fatalf("a payload above 16 MiB: length %d", len(b))
	}
	// What getPayload did not make is not taken: a later get of its
	// class must never hand out a buffer of another capacity.
	putPayload(make([]byte, 10, 5000))
	putPayload(make([]byte, 3))
	for range 100 {
		if b := getPayload(4097); cap(b) != 8192 {
			t.Fatalf("getPayload(4097) after foreign puts: capacity %d", cap(b))
		}
	}
}
