package chaos

import (
	"strings"
	"testing"
)

// A store fault names the file of a chain it damages (file: newest, base
// or fallback, corrupt: true implied); an unknown file is a one-line
// error naming the place.
func TestParseStoreFileDamage(t *testing.T) {
	sc, err := Parse("d.yaml", []byte(`name: damage
schedule:
  - {at: 1s, fault: store, target: count#0, file: base}
  - {at: 2s, fault: store, target: count#0, corrupt: true, file: fallback}
  - {at: 3s, fault: store, target: count#0, corrupt: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	steps := Plan(sc, 0)
	want := []map[string]string{{"file": "base"}, {"corrupt": "true", "file": "fallback"}, {"corrupt": "true"}}
	if len(steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(steps), len(want))
	}
	for i, s := range steps {
		if s.Action.Verb != "store" || len(s.Action.Args) != len(want[i]) {
			t.Fatalf("step %d: %+v, want store %v", i, s.Action, want[i])
		}
		for k, v := range want[i] {
			if s.Action.Args[k] != v {
				t.Fatalf("step %d: %s=%q, want %q", i, k, s.Action.Args[k], v)
			}
		}
	}
	for _, bad := range []struct{ entry, want string }{
		{"{at: 1s, fault: store, target: count#0, file: middle}", `d.yaml:3: schedule[0].file: unknown file "middle"`},
		{"{at: 1s, fault: store, target: count#0, file: base, fail: true}", "d.yaml:3: schedule[0]: store needs exactly one of"},
	} {
		_, err := Parse("d.yaml", []byte("name: bad\nschedule:\n  - "+bad.entry+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Fatalf("%s: %v, want %s…", bad.entry, err, bad.want)
		}
	}
}
