// Command guest is the simulation built for wasip1, which the exact mode
// (package sim/exact) runs under wazero with a virtual clock and a seeded
// random source: it takes `spate sim`'s arguments.
package main

import (
	"os"

	"spate/sim"
)

func main() { os.Exit(sim.Main(os.Args[1:], os.Stdout, os.Stderr)) }
