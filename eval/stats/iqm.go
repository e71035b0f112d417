package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// IQM returns the interquartile mean of x: the mean of the values left
// after cutting ⌊n/4⌋ values from each end of the sorted sample, the
// 25% trimmed mean of scipy.stats.trim_mean(x, 0.25) and the aggregate
// Agarwal et al. recommend ("Deep Reinforcement Learning at the Edge of
// the Statistical Precipice", NeurIPS 2021, §4). For n < 4 nothing is cut
// and IQM is the mean; for 1…8 it is the mean of 3…6, 4.5. The kept values
// are summed in sorted order as Mean does. x is not modified. It returns
// NaN for an empty x.
func IQM(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	return iqmSorted(s)
}

func iqmSorted(s []float64) float64 {
	cut := len(s) / 4
	return Mean(s[cut : len(s)-cut])
}

// SeedIQM returns the seed-level statistic of a score matrix x, one row
// per seed (an independently trained policy) and one column per placement
// (every row the same length):
//
//	θ(x) = IQM_s( m_s ),   m_s = (1/P) Σ_p x[s][p],
//
// the interquartile mean over the N seeds of each seed's mean over the P
// placements. With one seed it is that seed's mean. ok is false when x is
// empty, ragged or has an empty row, or a value is not finite.
func SeedIQM(x [][]float64) (theta float64, ok bool) {
	if !seedMatrix(x) {
		return math.NaN(), false
	}
	m := make([]float64, len(x))
	for s, row := range x {
		m[s] = Mean(row)
	}
	return IQM(m), true
}

func seedMatrix(x [][]float64) bool {
	if len(x) == 0 || len(x[0]) == 0 {
		return false
	}
	for _, row := range x {
		if len(row) != len(x[0]) {
			return false
		}
		for _, v := range row {
			if !finite(v) {
				return false
			}
		}
	}
	return true
}

// BootstrapSeedIQM returns the percentile-bootstrap confidence interval,
// at confidence level, of SeedIQM(x) from resamples resamples drawn with
// src; CI.Mean is the point estimate θ(x) (an IQM, not a mean).
//
// The resampling keeps both sources of variation and the pairing. Each
// resample draws P placement indices uniformly with replacement (one src
// draw each via rand.Rand.IntN, skipped when P = 1), the same draw for
// every seed, so a drawn placement brings each seed's score on it — a
// paired difference keeps its pair; then N seed indices with replacement
// (skipped when N = 1), each bringing its whole row. θ* is the IQM over the
// drawn seeds of their means over the drawn placements, each mean computed
// as BootstrapMean computes its resample's (shifted by its first value).
// The bounds are the empirical α/2 and 1 − α/2 quantiles (stat.Empirical)
// of the sorted θ*, α = 1 − level.
//
// This is Agarwal et al.'s stratified bootstrap (NeurIPS 2021, §4: runs
// resampled within each task, the tasks kept) adapted to scores that are
// not independent across the strata: there a run is trained per task, here
// one seed's policy plays every placement, so its runs share the seed's
// effect. Resampling seeds independently within each placement would
// average that effect away and give too narrow an interval; resampling
// whole seeds (rows) and whole placements (columns) is the two-way
// bootstrap of a crossed design (Owen, "The pigeonhole bootstrap", Annals
// of Applied Statistics 1(2), 2007). The evaluation's strata are its
// cells (profile × workload): each is resampled alone, from its own
// stream.
//
// With one seed the draws, the resample means and so the interval are
// exactly BootstrapMean's of that row.
//
// ok is false when N·P < 2, x is not a matrix of finite values (see
// SeedIQM), resamples < 1, level is outside (0, 1), or src is nil.
func BootstrapSeedIQM(x [][]float64, resamples int, level float64, src rand.Source) (ci CI, ok bool) {
	thetas, ok := seedResamples(x, resamples, level, src)
	if !ok {
		return CI{}, false
	}
	theta, _ := SeedIQM(x)
	alpha := 1 - level
	return CI{
		Mean:  theta,
		Lo:    stat.Quantile(alpha/2, stat.Empirical, thetas, nil),
		Hi:    stat.Quantile(1-alpha/2, stat.Empirical, thetas, nil),
		Level: level,
	}, true
}

// seedResamples returns BootstrapSeedIQM's sorted resampled statistics.
func seedResamples(x [][]float64, resamples int, level float64, src rand.Source) ([]float64, bool) {
	if !seedMatrix(x) || len(x)*len(x[0]) < 2 || resamples < 1 || !(level > 0 && level < 1) || src == nil {
		return nil, false
	}
	r := rand.New(src)
	n, p := len(x), len(x[0])
	draw := func(k int) int {
		if k == 1 {
			return 0
		}
		return r.IntN(k)
	}
	cols := make([]int, p)
	means := make([]float64, n)
	thetas := make([]float64, resamples)
	for b := range thetas {
		for j := range cols {
			cols[j] = draw(p)
		}
		for i := range means {
			row := x[draw(n)]
			first := row[cols[0]]
			s := 0.0
			for _, c := range cols[1:] {
				s += row[c] - first
			}
			means[i] = first + s/float64(p)
		}
		slices.Sort(means)
		thetas[b] = iqmSorted(means)
	}
	slices.Sort(thetas)
	return thetas, true
}
