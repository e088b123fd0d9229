package control

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// positional names the argument a verb takes after its target, so that
// `:scale count 4` and `:interval count 5s` read as they are spoken.
var positional = map[string]string{
	"scale":    "n",
	"interval": "interval",
}

// needsTarget lists the verbs that act on something named.
var needsTarget = map[string]bool{
	"kill": true, "restart": true, "pause": true, "resume": true,
	"partition": true, "scale": true, "interval": true, "link": true,
}

// ParseCommand turns a command line, as the dashboard's ':' prompt and
// `spate sim --add` take it, into an Action: VERB [TARGET] [VALUE]
// [key=value ...]. It checks only what can be checked without the
// cluster (a number for scale, a duration for interval); the cluster
// judges the rest and says why it refuses.
func ParseCommand(line string) (Action, error) {
	words := strings.Fields(line)
	if len(words) == 0 {
		return Action{}, errors.New("empty command (try :kill n2, :heal, :scale count 4)")
	}
	a := Action{Verb: strings.ToLower(words[0])}
	for _, c := range a.Verb {
		if !(c >= 'a' && c <= 'z' || c == '-' || c == '_') {
			return Action{}, fmt.Errorf("%q: not a verb", words[0])
		}
	}
	for _, w := range words[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			if k == "" {
				return Action{}, fmt.Errorf("%q: an argument needs a name (key=value)", w)
			}
			if a.Args == nil {
				a.Args = map[string]string{}
			}
			a.Args[k] = v
			continue
		}
		switch {
		case a.Target == "":
			a.Target = w
		case positional[a.Verb] != "" && a.Args[positional[a.Verb]] == "":
			if a.Args == nil {
				a.Args = map[string]string{}
			}
			a.Args[positional[a.Verb]] = w
		default:
			return Action{}, fmt.Errorf("%s: unexpected %q (arguments are key=value)", a.Verb, w)
		}
	}
	if needsTarget[a.Verb] && a.Target == "" {
		return Action{}, fmt.Errorf("%s: needs a target (a node, one, minority, majority, all, or an operator)", a.Verb)
	}
	switch a.Verb {
	case "scale":
		n, err := strconv.Atoi(a.Args["n"])
		if err != nil || n < 1 {
			return Action{}, fmt.Errorf("scale: parallelism must be a positive number, not %q (:scale count 4)", a.Args["n"])
		}
	case "interval":
		v := a.Args["interval"]
		if v == "" {
			return Action{}, errors.New("interval: needs a duration or auto (:interval count 5s)")
		}
		if v != "auto" {
			if d, err := time.ParseDuration(v); err != nil || d <= 0 {
				return Action{}, fmt.Errorf("interval: %q is not a positive duration (5s, 500ms) or auto", v)
			}
		}
	}
	return a, nil
}
