package ppo

import (
	"math/rand/v2"
	"testing"
)

// TestNetSumsMatchSumSquares: the interleaved per-parameter sums of squares
// equal sumSquares bit for bit, for archs where the largest parameter is
// the first layer, a hidden one, or runs out before the others.
func TestNetSumsMatchSumSquares(t *testing.T) {
	for _, hid := range [][]int{{64, 64}, {256, 256}, {3}} {
		cfg := DefaultConfig()
		cfg.Hidden = hid
		tr, err := New(cfg, &streamEnv{n: 14}, Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := range tr.grad {
			tr.grad[i] = float32(r.NormFloat64())
		}
		tr.netSums(0)
		tr.netSums(1)
		for i, p := range tr.arch.Params {
			if want := sumSquares(tr.grad[p.Off : p.Off+p.Len()]); want != tr.sums[i] {
				t.Fatalf("%v %s: %v want %v", hid, p.Name, tr.sums[i], want)
			}
		}
	}
}
