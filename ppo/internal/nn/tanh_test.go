package nn

import (
	"math"
	"math/rand/v2"
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
	b.Run("rational-go", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			tanh32Go(y, x)
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

// TestTanh32AssemblyMatchesGo holds tanh32 (the AVX kernel where the CPU
// has it) to tanh32Go bit for bit: a dense grid, every power of two and
// its neighbours, infinities, and random bit patterns (subnormals and
// huge values among them), at lengths that leave a remainder for the Go
// loop. A NaN input gives a NaN (its payload may differ).
func TestTanh32AssemblyMatchesGo(t *testing.T) {
	if !tanhAsm {
		t.Skip("no assembly kernel on this CPU")
	}
	x := make([]float32, 0, 1<<21)
	for i := range 1 << 20 {
		x = append(x, float32(-12+24*float64(i)/(1<<20)))
	}
	for e := -149; e <= 127; e++ {
		v := float32(math.Ldexp(1, e))
		x = append(x, v, -v, math.Nextafter32(v, 0), -math.Nextafter32(v, 0))
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), 9, -9, math.Nextafter32(9, 10), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		x = append(x, math.Float32frombits(r.Uint32()))
	}
	for _, n := range []int{len(x), len(x) - 1, 7, 5, 3, 1} {
		got, want := make([]float32, n), make([]float32, n)
		tanh32(got, x[:n])
		tanh32Go(want, x[:n])
		for i := range n {
			g, w := got[i], want[i]
			if w != w {
				if g == g {
					t.Fatalf("n=%d: tanh32(%g) = %g, want NaN", n, x[i], g)
				}
				continue
			}
			if math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("n=%d: tanh32(%g) = %g (%#x), Go loop %g (%#x)", n, x[i], g, math.Float32bits(g), w, math.Float32bits(w))
			}
		}
	}
}
