package kcfs

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantileNearestRank holds quantile (gonum's stat.Quantile, Empirical)
// to the nearest-rank definition the check reports, xs[⌈q·n⌉ − 1], on
// hand-worked cases and on random samples with ties at every q the check
// uses and random ones.
func TestQuantileNearestRank(t *testing.T) {
	nearest := func(xs []float64, q float64) float64 {
		i := int(math.Ceil(q*float64(len(xs)))) - 1
		return xs[min(max(i, 0), len(xs)-1)]
	}
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{7}, 0.95, 7},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.51, 3},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{[]float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.95, 100},
		{[]float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.9, 90},
	} {
		if got := quantile(tc.xs, tc.q); got != tc.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		xs := make([]float64, 1+r.IntN(300))
		for i := range xs {
			xs[i] = float64(r.IntN(50)) / 7 // ties
		}
		slices.Sort(xs)
		for _, q := range []float64{0, 0.5, 0.95, 0.99, 1, r.Float64()} {
			if got, want := quantile(xs, q), nearest(xs, q); got != want {
				t.Fatalf("n %d q %v: gonum %v, nearest rank %v", len(xs), q, got, want)
			}
		}
	}
}
