package nn

import (
	"flag"
	"math"
	"testing"
)

var exhaustive = flag.Bool("exhaustive", false, "TestExpSliceAllFloat32: check ExpSlice on every float32 input (about 2 minutes)")

// TestExpSliceAllFloat32 holds ExpSlice to math.Exp bit for bit on every
// float32 bit pattern widened to float64 (the inputs of the exp cache),
// when run with -exhaustive.
func TestExpSliceAllFloat32(t *testing.T) {
	if !*exhaustive {
		t.Skip("run with -exhaustive")
	}
	const chunk = 1 << 16
	xs, got := make([]float64, chunk), make([]float64, chunk)
	bad := 0
	for hi := uint64(0); hi < 1<<32; hi += chunk {
		for i := range xs {
			xs[i] = float64(math.Float32frombits(uint32(hi + uint64(i))))
		}
		ExpSlice(got, xs)
		for i, x := range xs {
			if want := math.Exp(x); math.Float64bits(got[i]) != math.Float64bits(want) {
				bad++
				if bad <= 10 {
					t.Errorf("ExpSlice(%v) = %v, math.Exp %v", x, got[i], want)
				}
			}
		}
	}
	t.Logf("2^32 float32 inputs, %d mismatches, assembly %v", bad, expAsm)
}
