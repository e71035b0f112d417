package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpSliceMatchesMathExp holds ExpSlice to math.Exp bit for bit: on a
// dense grid over the whole range where Exp is neither 0 nor +Inf, on
// random float64 and float32 inputs, on the kernel's bounds and their
// neighbours, and on special values (which must reach math.Exp), at every
// offset within a block of eight.
func TestExpSliceMatchesMathExp(t *testing.T) {
	var xs []float64
	for x := -760.0; x <= 720; x += 0.0009765625 * 3.7 {
		xs = append(xs, x)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		xs = append(xs, r.NormFloat64()*20, (r.Float64()-0.5)*1500, float64(float32(r.NormFloat64()*8)), -r.ExpFloat64())
	}
	for _, b := range []float64{expLo, expHi, 7.09782712893384e+02, -745.1332191019411, 0, 1, -1, 0.5 * math.Ln2, -0.5 * math.Ln2} {
		xs = append(xs, b, math.Nextafter(b, math.Inf(1)), math.Nextafter(b, math.Inf(-1)))
	}
	// Ties of x·log2e at k + 1/2, where the rounding of k decides.
	for k := -1020; k <= 1020; k++ {
		x := (float64(k) + 0.5) / math.Log2E
		xs = append(xs, x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)))
	}
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, 1e-310}
	xs = append(xs, specials...)
	check := func(xs []float64) {
		got := make([]float64, len(xs))
		ExpSlice(got, xs)
		for i, x := range xs {
			if want := math.Exp(x); math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("ExpSlice(%v) = %v (%#x), math.Exp %v (%#x)", x, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
			}
		}
	}
	check(xs)
	for off := range 8 {
		for _, s := range specials {
			block := []float64{0.1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11}
			block[off] = s
			check(block)
		}
	}
	in := append([]float64(nil), xs...) // in place
	ExpSlice(in, in)
	for i, x := range xs {
		if math.Float64bits(in[i]) != math.Float64bits(math.Exp(x)) {
			t.Fatalf("in place: exp(%v) = %v", x, in[i])
		}
	}
	t.Logf("%d inputs, assembly %v", len(xs), expAsm)
}

func BenchmarkExpSlice(b *testing.B) {
	xs := make([]float64, 11520)
	for i := range xs {
		xs[i] = -float64(i%97) * 0.13
	}
	ys := make([]float64, len(xs))
	b.Run("ExpSlice", func(b *testing.B) {
		for b.Loop() {
			ExpSlice(ys, xs)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			for i, x := range xs {
				ys[i] = math.Exp(x)
			}
		}
	})
}

// TestLogSoftmax32Batched holds the batched float32 log-softmax (the
// exponentials through ExpSlice) to the one-exponential-at-a-time loop,
// bit for bit, for several nvec, row counts and magnitudes.
func TestLogSoftmax32Batched(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, nvec := range [][]int{{5, 5, 5, 5, 5, 5, 5, 5, 5}, {3, 2}, {1}, {7, 1, 4}, {600, 500}} {
		w := 0
		for _, k := range nvec {
			w += k
		}
		for _, rows := range []int{1, 3, 22, 23, 256} {
			for _, scale := range []float64{0.01, 3, 300} {
				x := make([]float32, rows*w+w/2) // a partial row at the end is left alone
				for i := range x {
					x[i] = float32(r.NormFloat64() * scale)
				}
				got, want := make([]float32, len(x)), make([]float32, len(x))
				logSoftmax32(got, x, nvec)
				logSoftmax32Slow(want, x, nvec)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("nvec %v rows %d scale %v: y[%d] = %v, want %v", nvec, rows, scale, i, got[i], want[i])
					}
				}
			}
		}
	}
}
