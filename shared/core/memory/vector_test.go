package memory

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 384, 385, 768, 1536} {
		a, b := make([]float32, n), make([]float32, n+3) // b may be longer
		var want float64
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			want += float64(a[i]) * float64(b[i])
		}
		for name, got := range map[string]float32{"Dot": Dot(a, b), "dotGeneric": dotGeneric(a, b)} {
			if math.Abs(float64(got)-want) > 1e-4*math.Max(1, math.Sqrt(float64(n))) {
				t.Errorf("%s of %d floats = %v, want %v", name, n, got, want)
			}
		}
	}
}

func TestNormalizedAndCosine(t *testing.T) {
	tests := []struct {
		name string
		v    []float32
		want []float32
	}{
		{"unit", []float32{1, 0}, []float32{1, 0}},
		{"scaled", []float32{3, 4}, []float32{0.6, 0.8}},
		{"zero", []float32{0, 0}, nil},
		{"empty", nil, nil},
		{"infinite", []float32{float32(math.Inf(1)), 1}, nil},
		{"nan", []float32{float32(math.NaN()), 1}, nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Normalized(tc.v), cmpopts.EquateApprox(0, 1e-6)); diff != "" {
			t.Errorf("Normalized(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
	cos := []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{5, 0}, 1},
		{[]float32{1, 0}, []float32{0, 2}, 0},
		{[]float32{1, 1}, []float32{-1, -1}, -1},
		{[]float32{1, 0}, []float32{1, 0, 0}, 0},
		{[]float32{0, 0}, []float32{1, 0}, 0},
		{nil, nil, 0},
	}
	for _, tc := range cos {
		if got := Cosine(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cosine(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func BenchmarkDot384(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := make([]float32, 384), make([]float32, 384)
	for i := range x {
		x[i], y[i] = rng.Float32(), rng.Float32()
	}
	b.Run("Dot", func(b *testing.B) {
		for b.Loop() {
			Dot(x, y)
		}
	})
	b.Run("generic", func(b *testing.B) {
		for b.Loop() {
			dotGeneric(x, y)
		}
	})
}
