package tui

import (
	"errors"
	"strings"

	"spate/control"
)

// errQuit is what parseCommand returns for :q and :quit.
var errQuit = errors.New("quit")

// parseCommand turns a command line (without the leading ':') into an
// Action (control.ParseCommand), or errQuit for :q and :quit.
func parseCommand(line string) (control.Action, error) {
	if w := strings.Fields(line); len(w) > 0 && (strings.EqualFold(w[0], "q") || strings.EqualFold(w[0], "quit")) {
		return control.Action{Verb: strings.ToLower(w[0])}, errQuit
	}
	return control.ParseCommand(line)
}
