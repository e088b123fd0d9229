//go:build race

package tuner

// raceEnabled is true under -race, where reading the NASA rate trace alone
// (bzip2) takes 5-10 s and the simulator runs ten times slower.
const raceEnabled = true
