package tui

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"spate/control"
)

func TestParseCommand(t *testing.T) {
	cases := []struct {
		line string
		want control.Action
		err  string
	}{
		{line: "kill n2", want: control.Action{Verb: "kill", Target: "n2"}},
		{line: "  KILL   n2 ", want: control.Action{Verb: "kill", Target: "n2"}},
		{line: "partition majority", want: control.Action{Verb: "partition", Target: "majority"}},
		{line: "partition n2 shape=one", want: control.Action{Verb: "partition", Target: "n2", Args: map[string]string{"shape": "one"}}},
		{line: "heal", want: control.Action{Verb: "heal"}},
		{line: "scale count 4", want: control.Action{Verb: "scale", Target: "count", Args: map[string]string{"n": "4"}}},
		{line: "scale count n=4", want: control.Action{Verb: "scale", Target: "count", Args: map[string]string{"n": "4"}}},
		{line: "interval count 5s", want: control.Action{Verb: "interval", Target: "count", Args: map[string]string{"interval": "5s"}}},
		{line: "interval count auto", want: control.Action{Verb: "interval", Target: "count", Args: map[string]string{"interval": "auto"}}},
		{line: "checkpoint", want: control.Action{Verb: "checkpoint"}},
		{line: "checkpoint count#1", want: control.Action{Verb: "checkpoint", Target: "count#1"}},
		{line: "link n2 latency=50ms jitter=10ms", want: control.Action{Verb: "link", Target: "n2", Args: map[string]string{"latency": "50ms", "jitter": "10ms"}}},
		{line: "store corrupt=latest", want: control.Action{Verb: "store", Args: map[string]string{"corrupt": "latest"}}},
		{line: "", err: "empty command"},
		{line: "kill", err: "needs a target"},
		{line: "scale count", err: "positive number"},
		{line: "scale count zero", err: "positive number"},
		{line: "scale count -1", err: "positive number"},
		{line: "interval count", err: "needs a duration"},
		{line: "interval count soon", err: "not a positive duration"},
		{line: "kill n2 n3", err: "unexpected"},
		{line: "kill n2 =x", err: "needs a name"},
		{line: "k!ll n2", err: "not a verb"},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			got, err := parseCommand(c.line)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("parseCommand(%q) = %v, %v; want an error with %q", c.line, got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseCommand(%q): %v", c.line, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("parseCommand(%q) = %#v, want %#v", c.line, got, c.want)
			}
		})
	}
	for _, q := range []string{"q", "quit"} {
		if _, err := parseCommand(q); !errors.Is(err, errQuit) {
			t.Errorf("parseCommand(%q) = %v, want errQuit", q, err)
		}
	}
}

// FuzzParseCommand: never a panic, and what parses prints back (as
// Action.String, the form spate chaos takes) to the same action.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"kill n2", "scale count 4", "interval count 5s", "partition n2 shape=one", "heal", "x =", "link a b=c=d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		a, err := parseCommand(line)
		if err != nil {
			return
		}
		b, err := parseCommand(a.String())
		if err != nil {
			t.Fatalf("%q parsed to %v, which does not parse: %v", line, a, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q parsed to %#v, printed %q, parsed to %#v", line, a, a.String(), b)
		}
	})
}
