package memory

import "math"

// Dot returns the dot product of a and b over the length of a; b must be
// at least as long. It is the inner loop of in-process vector search: on
// amd64 with AVX2 and FMA it runs in assembly, 32 floats a step.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	s, n := dotAccel(a, b)
	return s + dotGeneric(a[n:], b[n:])
}

// dotGeneric is Dot in Go, with eight independent sums the processor can
// work on in parallel.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 16 {
		aa := a[:16:16]
		bb := b[:16:16]
		s0 += aa[0]*bb[0] + aa[8]*bb[8]
		s1 += aa[1]*bb[1] + aa[9]*bb[9]
		s2 += aa[2]*bb[2] + aa[10]*bb[10]
		s3 += aa[3]*bb[3] + aa[11]*bb[11]
		s4 += aa[4]*bb[4] + aa[12]*bb[12]
		s5 += aa[5]*bb[5] + aa[13]*bb[13]
		s6 += aa[6]*bb[6] + aa[14]*bb[14]
		s7 += aa[7]*bb[7] + aa[15]*bb[15]
		a = a[16:]
		b = b[16:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}

// Normalized returns a unit-length copy of v, or nil when v is empty or
// has no direction (all zeros, or not finite).
func Normalized(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsInf(sum, 0) || math.IsNaN(sum) {
		return nil
	}
	inv := 1 / math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// Cosine returns the cosine similarity of a and b, or 0 when their lengths
// differ or either has no direction.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
