// Package cputime reads the CPU time this process has used, user and
// system, where the platform can say it; under wasip1 (the simulation's
// exact mode) it is always zero.
package cputime
