package live

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// nearestRank is the definition quantile implements, written out: the
// value of 1-based rank ⌈q·n⌉ (rank 1 for q = 0).
func nearestRank(xs []float64, q float64) float64 {
	r := int(math.Ceil(q * float64(len(xs))))
	return xs[max(1, min(r, len(xs)))-1]
}

// TestQuantileIsNearestRank: gonum's empirical quantile, which quantile
// calls, agrees with the nearest-rank definition on random data with
// ties, every n up to 60 and q on a fine grid (including 0, 0.95 and 1),
// and an empty window is 0.
func TestQuantileIsNearestRank(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 60; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(r.IntN(20)) // ties
		}
		slices.Sort(xs)
		for k := 0; k <= 200; k++ {
			q := float64(k) / 200
			if got, want := quantile(xs, q), nearestRank(xs, q); got != want {
				t.Fatalf("n %d q %v: %v, want %v", n, q, got, want)
			}
		}
		if got, want := quantile(xs, 0.95), nearestRank(xs, 0.95); got != want {
			t.Fatalf("n %d q 0.95: %v, want %v", n, got, want)
		}
	}
	if quantile(nil, 0.95) != 0 {
		t.Error("empty window: want 0")
	}
	// p95 merges completed and open inputs before ranking.
	if got := p95([]float64{1, 2, 3}, []float64{10}); got != 10 {
		t.Errorf("p95 = %v, want the open input's age 10", got)
	}
}
