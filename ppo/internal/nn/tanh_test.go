package nn

import (
	"math"
	"testing"
)

// TestTanh32 holds the rational tanh within 1 ulp of math.Tanh rounded to
// float32 over a dense grid and at the edges, and mostly correctly rounded.
func TestTanh32(t *testing.T) {
	const n = 2_000_001
	x := make([]float32, 0, n+64)
	for i := range n {
		x = append(x, float32(-10+20*float64(i)/(n-1)))
	}
	for e := -40; e <= 3; e++ {
		v := float32(math.Ldexp(1, e))
		x = append(x, v, -v, math.Nextafter32(v, 0), math.Float32frombits(math.Float32bits(v)+1))
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), 1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)))
	y := make([]float32, len(x))
	tanh32(y, x)
	exact := 0
	for i, v := range x {
		want := float32(math.Tanh(float64(v)))
		d := int64(math.Float32bits(y[i])) - int64(math.Float32bits(want))
		if math.Signbit(float64(want)) != math.Signbit(float64(y[i])) && want != 0 {
			t.Fatalf("tanh32(%g) = %g, want %g (sign)", v, y[i], want)
		}
		if d < -1 || d > 1 {
			t.Fatalf("tanh32(%g) = %g, want %g (%d ulp)", v, y[i], want, d)
		}
		if d == 0 {
			exact++
		}
		if y[i] > 1 || y[i] < -1 {
			t.Fatalf("tanh32(%g) = %g outside [−1, 1]", v, y[i])
		}
	}
	if f := float64(exact) / float64(len(x)); f < 0.85 {
		t.Errorf("correctly rounded for %.3f of inputs, want ≥ 0.85", f)
	}
	nan := []float32{float32(math.NaN())}
	tanh32(nan, nan)
	if nan[0] == nan[0] {
		t.Errorf("tanh32(NaN) = %g, want NaN", nan[0])
	}
}

func BenchmarkTanh(b *testing.B) {
	x := make([]float32, 256*64)
	for i := range x {
		x[i] = float32(i%2000-1000) / 250
	}
	y := make([]float32, len(x))
	b.Run("rational", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			tanh32(y, x)
		}
	})
	b.Run("exp", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			for i, v := range x {
				e := math.Exp(2 * float64(v))
				y[i] = float32((e - 1) / (e + 1))
			}
		}
	})
}
