// Package control is the control API of a running cluster: the one way to
// act on it. The TUI, `spate status`, `spate chaos ...`, `spate scale` and
// the scenario runner all go through it.
//
// The coordinator serves it over HTTP with JSON on loopback; its address is
// the file `control` in the run directory and every request carries the
// run's token as "Authorization: Bearer TOKEN" (compared in constant time;
// a wrong or missing token gets 401 and changes nothing).
//
//	GET  /v1/status            Status
//	POST /v1/act               Action -> Result
//	GET  /v1/events?from=SEQ   the event stream as JSON lines, from the
//	                           retained history after SEQ, then live
//
// An Action is a verb, a target and arguments, the same words on every
// surface: `spate chaos kill n2`, the TUI's `:kill n2` and a scenario's
// `fault: kill, target: n2` are all Action{Verb: "kill", Target: "n2"}.
// Verbs the cluster does not know, or targets that name nothing, get a
// Result with OK false and a one-line reason (HTTP 400), never a panic.
//
// Server is the HTTP plumbing only: it decodes, authenticates and hands
// each request to a Backend (the coordinator), so the protocol stays in
// the coordinator's event loop. Client is safe for concurrent use.
package control
