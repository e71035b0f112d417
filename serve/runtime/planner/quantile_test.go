package planner

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// nearestRank is the nearest-rank quantile by its definition: x_k for
// k = ⌈q·n⌉ (1-based), x_1 for q = 0.
func nearestRank(xs []float64, q float64) float64 {
	k := int(math.Ceil(q * float64(len(xs))))
	return xs[max(1, k)-1]
}

// TestQuantileIsNearestRank holds quantile (gonum's empirical quantile)
// against the nearest-rank definition the planner's figures use, on
// random samples with ties and at the quantiles it reports, the edges
// and random ones.
func TestQuantileIsNearestRank(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	if got := quantile(nil, 0.5); got != 0 {
		t.Fatalf("empty: %v, want 0", got)
	}
	for trial := range 2000 {
		n := 1 + r.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(r.IntN(50)) / 4 // ties
		}
		slices.Sort(xs)
		for _, q := range []float64{0, 0.01, 0.5, 0.95, 0.99, 1, r.Float64()} {
			if got, want := quantile(xs, q), nearestRank(xs, q); got != want {
				t.Fatalf("trial %d: n %d q %v: %v, nearest rank %v", trial, n, q, got, want)
			}
		}
	}
}
