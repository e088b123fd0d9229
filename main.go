// Command spate is a terminal-driven lab cluster for fault tolerance in
// distributed stream processing. See README.md; the command line is
// package cli.
package main

import (
	"os"

	"spate/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(cli.Main(version, os.Args[1:], os.Stdout, os.Stderr)) }
