// Package storetest is the contract of state.Store as one table of tests,
// run against every implementation (state's DirStore and MemStore, the
// coordinator-served store and the S3 store of package stores): atomic
// and durable puts, content checksummed and checked on read, lists by
// prefix, deletes, not-found and bad-name errors, concurrent puts.
//
// An implementation's test calls Run with a function that makes a fresh,
// empty store; everything else is here, so that the implementations
// cannot drift apart.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"spate/state"
)

// Harness is one store under test.
type Harness struct {
	Store state.Store
	// Corrupt damages the stored content of name behind the store's
	// back, as a bad disk or a bad object would. Nil: the damage test is
	// skipped.
	Corrupt func(name string) error
	// Verifies says that the store checksums what it stores itself, so
	// that a Get or an Open of damaged content fails with an error
	// wrapping state.ErrCorrupt. Without it the store hands the damaged
	// bytes back, and the content's own checksum (the checkpoint format's
	// CRC-32C) is what must catch the damage; the test checks that too.
	Verifies bool
	// Reopen returns a second store over the same storage, as a
	// restarted process would open it: what a Put made durable must be
	// there. Nil: the durability test is skipped (a MemStore).
	Reopen func() state.Store
}

// Run runs every contract test on stores made by open, a fresh and empty
// one for each test.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, h Harness)
}{
	{"not-found", testNotFound},
	{"put-get-replace", testPutGet},
	{"put-in-parts", testParts},
	{"list-by-prefix", testList},
	{"delete", testDelete},
	{"bad-names", testBadNames},
	{"atomic-replace", testAtomic},
	{"durable", testDurable},
	{"checksummed", testChecksummed},
	{"concurrent-puts", testConcurrentPuts},
}

func mustPut(t *testing.T, s state.Store, name string, data ...[]byte) {
	t.Helper()
	if err := s.Put(name, data...); err != nil {
		t.Fatalf("Put %s: %v", name, err)
	}
}

func wantContent(t *testing.T, s state.Store, name string, want []byte) {
	t.Helper()
	b, err := s.Get(name)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("Get %s = %d bytes %.40q, %v; want %d bytes %.40q", name, len(b), b, err, len(want), want)
	}
	f, err := s.Open(name)
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	b, err = io.ReadAll(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("Open %s, read = %d bytes, %v; want %d bytes", name, len(b), err, len(want))
	}
}

func testNotFound(t *testing.T, h Harness) {
	s := h.Store
	if _, err := s.Get("a/b"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Get of a missing name: %v, want ErrNotFound", err)
	}
	if _, err := s.Open("a/b"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Open of a missing name: %v, want ErrNotFound", err)
	}
	if err := s.Delete("a/b"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Delete of a missing name: %v, want ErrNotFound", err)
	}
	if got, err := s.List(""); err != nil || len(got) != 0 {
		t.Errorf("List of an empty store: %q, %v", got, err)
	}
}

func testPutGet(t *testing.T, h Harness) {
	s := h.Store
	data := []byte("hello")
	mustPut(t, s, "count#0/a", data)
	data[0] = 'X' // the store keeps none of data's storage
	wantContent(t, s, "count#0/a", []byte("hello"))
	mustPut(t, s, "count#0/a", []byte("replaced, and longer"))
	wantContent(t, s, "count#0/a", []byte("replaced, and longer"))
	mustPut(t, s, "count#0/a", []byte("short"))
	wantContent(t, s, "count#0/a", []byte("short"))
	mustPut(t, s, "count#0/empty")
	wantContent(t, s, "count#0/empty", nil)
}

func testParts(t *testing.T, h Harness) {
	s := h.Store
	parts := [][]byte{[]byte("he"), nil, []byte("ad"), []byte("-body")}
	mustPut(t, s, "count#1/parts", parts...)
	parts[0][0] = 'X' // nor of the parts'
	wantContent(t, s, "count#1/parts", []byte("head-body"))
	// Many small parts around parts larger than a buffer or a frame.
	var many [][]byte
	for i := range 900 {
		n := 1 + i%3000
		if i%300 == 299 {
			n = 3 << 20
		}
		many = append(many, bytes.Repeat([]byte{byte(i)}, n))
	}
	mustPut(t, s, "count#1/many", many...)
	wantContent(t, s, "count#1/many", bytes.Join(many, nil))
}

func testList(t *testing.T, h Harness) {
	s := h.Store
	for _, n := range []string{"count#0/b", "count#0/a", "count#1/a", "top", "count#0/sub/c", "count#10/a"} {
		mustPut(t, s, n, []byte(n))
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"count#0/a", "count#0/b", "count#0/sub/c", "count#1/a", "count#10/a", "top"}},
		{"count#0/", []string{"count#0/a", "count#0/b", "count#0/sub/c"}},
		{"count#1", []string{"count#1/a", "count#10/a"}},
		{"count#1/", []string{"count#1/a"}},
		{"count#0/s", []string{"count#0/sub/c"}},
		{"count#0/sub/c", []string{"count#0/sub/c"}},
		{"nope", nil},
	} {
		if got, err := s.List(tc.prefix); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, %v; want %q", tc.prefix, got, err, tc.want)
		}
	}
}

func testDelete(t *testing.T, h Harness) {
	s := h.Store
	mustPut(t, s, "i#0/a", []byte("a"))
	mustPut(t, s, "i#0/b", []byte("b"))
	if err := s.Delete("i#0/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("i#0/a"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete("i#0/a"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("a second Delete: %v, want ErrNotFound", err)
	}
	if got, err := s.List(""); err != nil || !slices.Equal(got, []string{"i#0/b"}) {
		t.Errorf("List after Delete = %q, %v", got, err)
	}
	wantContent(t, s, "i#0/b", []byte("b"))
}

func testBadNames(t *testing.T, h Harness) {
	s := h.Store
	for _, bad := range []string{"", "/abs", "../up", "a/../../b", "a//b", "a/./b", ".hidden", "a/.tmp", "a\\b", "a/", "a\x00b"} {
		if err := s.Put(bad, []byte("x")); !errors.Is(err, state.ErrBadName) {
			t.Errorf("Put(%q) = %v, want ErrBadName", bad, err)
		}
		if _, err := s.Get(bad); !errors.Is(err, state.ErrBadName) {
			t.Errorf("Get(%q) = %v, want ErrBadName", bad, err)
		}
		if _, err := s.Open(bad); !errors.Is(err, state.ErrBadName) {
			t.Errorf("Open(%q) = %v, want ErrBadName", bad, err)
		}
		if err := s.Delete(bad); !errors.Is(err, state.ErrBadName) {
			t.Errorf("Delete(%q) = %v, want ErrBadName", bad, err)
		}
	}
	if got, err := s.List(""); err != nil || len(got) != 0 {
		t.Errorf("bad names stored something: %q, %v", got, err)
	}
}

// testAtomic replaces one name again and again with contents of
// different lengths while readers read it: each read is one whole
// content, never a mix, a prefix or nothing.
func testAtomic(t *testing.T, h Harness) {
	s := h.Store
	contents := [][]byte{bytes.Repeat([]byte{'a'}, 700<<10), bytes.Repeat([]byte{'b'}, 300<<10), bytes.Repeat([]byte{'c'}, 1<<20+17)}
	mustPut(t, s, "op#0/f", contents[0])
	const puts = 12
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := 1; i <= puts; i++ {
			if err := s.Put("op#0/f", contents[i%len(contents)]); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads > 0 {
						return
					}
				default:
				}
				b, err := s.Get("op#0/f")
				if err != nil {
					t.Errorf("Get during replacing Puts: %v", err)
					return
				}
				if !slices.ContainsFunc(contents, func(c []byte) bool { return bytes.Equal(b, c) }) {
					t.Errorf("Get during replacing Puts: %d bytes starting %q: not one whole content", len(b), b[:min(len(b), 8)])
					return
				}
			}
		})
	}
	wg.Wait()
	wantContent(t, s, "op#0/f", contents[puts%len(contents)])
}

func testDurable(t *testing.T, h Harness) {
	if h.Reopen == nil {
		t.Skip("the store keeps nothing past its process (in memory)")
	}
	mustPut(t, h.Store, "d#0/a", []byte("durable"))
	mustPut(t, h.Store, "d#0/b", []byte("deleted"))
	if err := h.Store.Delete("d#0/b"); err != nil {
		t.Fatal(err)
	}
	s := h.Reopen()
	wantContent(t, s, "d#0/a", []byte("durable"))
	if got, err := s.List("d#0/"); err != nil || !slices.Equal(got, []string{"d#0/a"}) {
		t.Fatalf("List after reopening = %q, %v", got, err)
	}
}

// sample is a valid checkpoint file: the format's own CRC-32C is what a
// store that does not checksum relies on.
func sample(t *testing.T) []byte {
	t.Helper()
	b, err := state.Encode(&state.Snapshot{Instance: "count#1", Gen: 2, ID: 5, Base: 5, Full: true,
		Sections: map[string][]byte{"meta": bytes.Repeat([]byte("m"), 5000)},
		Groups:   []state.GroupData{{KG: 3, Entries: []state.KV{{Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 3000)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testChecksummed(t *testing.T, h Harness) {
	if h.Corrupt == nil {
		t.Skip("no way to damage this store's content behind its back")
	}
	s := h.Store
	good := sample(t)
	mustPut(t, s, "count#1/g00000002-c000000005-full.ckpt", good)
	wantContent(t, s, "count#1/g00000002-c000000005-full.ckpt", good)
	if err := h.Corrupt("count#1/g00000002-c000000005-full.ckpt"); err != nil {
		t.Fatal(err)
	}
	check := func(how string, b []byte, err error) {
		t.Helper()
		if h.Verifies {
			if !errors.Is(err, state.ErrCorrupt) {
				t.Errorf("%s of damaged content: %d bytes, %v; want an error wrapping ErrCorrupt", how, len(b), err)
			}
			return
		}
		if err != nil {
			t.Errorf("%s of damaged content: %v (this store hands the bytes back)", how, err)
			return
		}
		if bytes.Equal(b, good) {
			t.Errorf("%s: the damage did not reach the stored content", how)
		}
		if _, err := state.Decode(b); !errors.Is(err, state.ErrCorrupt) {
			t.Errorf("%s: Decode of damaged content: %v, want ErrCorrupt", how, err)
		}
	}
	b, err := s.Get("count#1/g00000002-c000000005-full.ckpt")
	check("Get", b, err)
	f, err := s.Open("count#1/g00000002-c000000005-full.ckpt")
	if err == nil {
		b, err = io.ReadAll(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	check("Open", b, err)
	// A Put over damaged content heals it.
	mustPut(t, s, "count#1/g00000002-c000000005-full.ckpt", good)
	wantContent(t, s, "count#1/g00000002-c000000005-full.ckpt", good)
}

func testConcurrentPuts(t *testing.T, h Harness) {
	s := h.Store
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				name := fmt.Sprintf("i#%d/f%02d", w, i%5)
				want := bytes.Repeat([]byte{byte(w), byte(i)}, 500)
				if err := s.Put(name, want); err != nil {
					t.Error(err)
					return
				}
				if b, err := s.Get(name); err != nil || !bytes.Equal(b, want) {
					t.Errorf("Get %s after its Put: %d bytes, %v", name, len(b), err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := s.List("")
	if err != nil || len(got) != 20 {
		t.Fatalf("List: %d names, %v; want 20", len(got), err)
	}
	for w := range 4 {
		for f := range 5 {
			name := fmt.Sprintf("i#%d/f%02d", w, f)
			last := 15 + f // the last i with i%5 == f
			wantContent(t, s, name, bytes.Repeat([]byte{byte(w), byte(last)}, 500))
		}
	}
}
