//go:build race

package traces

// raceEnabled is true under -race, where decompressing the 10 MB NASA rate
// trace with compress/bzip2 alone takes 5-10 s.
const raceEnabled = true
