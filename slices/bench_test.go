package slices

import "testing"

func benchRescale(b *testing.B, m, n int, load []float64) {
	old, err := Initial("count", 128, m)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Rescale(old, n, load); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRescale2to4Uniform(b *testing.B)  { benchRescale(b, 2, 4, uniform(128)) }
func BenchmarkRescale8to16Uniform(b *testing.B) { benchRescale(b, 8, 16, uniform(128)) }
func BenchmarkRescale8to16Zero(b *testing.B)    { benchRescale(b, 8, 16, make([]float64, 128)) }
func BenchmarkRescale64to128Zero(b *testing.B)  { benchRescale(b, 64, 128, make([]float64, 128)) }
