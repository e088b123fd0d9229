package zzwarm

import (
	"testing"

	"spate/traces"
)

func BenchmarkWarm(b *testing.B) {
	for range b.N {
		traces.Warm("gen:constant", traces.Options{Keys: 1000000, Partitions: 2})
	}
}
