package traces

import "math"

// The generators must give the same records on every machine that runs the
// same spec, so the few transcendental functions they need are computed
// here with + - * / only, each product rounded by an explicit float64
// conversion. The Go spec lets a compiler fuse x*y+z into one instruction
// (arm64, ppc64, s390x and amd64 at GOAMD64=v3 may), which changes the last
// bit; math.Cos and math.Pow are written in plain Go and may be fused that
// way. An explicit conversion forbids the fusion, and IEEE 754 fixes the
// rest.

// cos2pi returns cos(2π·num/den) for 0 <= num < den, den > 0. The angle is
// reduced in integers, so there is no rounding in the reduction.
func cos2pi(num, den int64) float64 {
	n4 := num * 4
	q := n4 / den
	r := n4 - q*den // angle within the quadrant is (r/den)·π/2, r in [0, den)
	// Past π/4, use the co-function of the complement (also exact in integers).
	co := 2*r > den
	if co {
		r = den - r
	}
	x := float64(float64(r)/float64(den)) * (math.Pi / 2)
	// cos of the quadrant angle: q=0 cos, 1 −sin, 2 −cos, 3 sin; and the
	// complement swaps cos and sin.
	useSin := (q == 1 || q == 3) != co
	var v float64
	if useSin {
		v = sinPoly(x)
	} else {
		v = cosPoly(x)
	}
	if q == 1 || q == 2 {
		return -v
	}
	return v
}

// cosPoly is the Taylor polynomial of cos to x^16, for |x| <= π/4 (error
// below 1e-18).
func cosPoly(x float64) float64 {
	x2 := float64(x * x)
	p := 1.0 / 20922789888000 // 1/16!
	for _, c := range [...]float64{-1.0 / 87178291200, 1.0 / 479001600, -1.0 / 3628800,
		1.0 / 40320, -1.0 / 720, 1.0 / 24, -1.0 / 2, 1} {
		p = float64(p*x2) + c
	}
	return p
}

// sinPoly is the Taylor polynomial of sin to x^17, for |x| <= π/4.
func sinPoly(x float64) float64 {
	x2 := float64(x * x)
	p := 1.0 / 355687428096000 // 1/17!
	for _, c := range [...]float64{-1.0 / 1307674368000, 1.0 / 6227020800, -1.0 / 39916800,
		1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6, 1} {
		p = float64(p*x2) + c
	}
	return float64(p * x)
}

// detLog returns ln(x) for x > 0 (finite, normal).
func detLog(x float64) float64 {
	f, e := math.Frexp(x) // x = f·2^e, f in [0.5, 1), exact
	if f < math.Sqrt2/2 {
		f *= 2 // exact
		e--
	}
	// ln f = 2·atanh(z), z = (f-1)/(f+1), |z| <= 0.172
	z := (f - 1) / (f + 1)
	z2 := float64(z * z)
	term := z
	sum := 0.0
	for n := 1; n <= 31; n += 2 {
		sum += float64(term / float64(n))
		term = float64(term * z2)
	}
	return float64(float64(e)*math.Ln2) + float64(2*sum)
}

// detExp returns e^x for x in about [-700, 700].
func detExp(x float64) float64 {
	n := math.Floor(float64(x/math.Ln2) + 0.5)
	r := x - float64(n*math.Ln2) // |r| <= ~0.35
	sum, term := 1.0, 1.0
	for k := 1; k <= 20; k++ {
		term = float64(float64(term*r) / float64(k))
		sum += term
	}
	return math.Ldexp(sum, int(n))
}

// detPow returns k^-s for k >= 1, s >= 0.
func detPow(k int, s float64) float64 {
	if s == 0 || k == 1 {
		return 1
	}
	return detExp(-float64(s * detLog(float64(k))))
}
