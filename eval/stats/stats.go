package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// CI is a point estimate with a two-sided confidence interval.
type CI struct {
	Mean   float64 // point estimate: the sample mean
	Lo, Hi float64 // interval bounds, Lo ≤ Mean ≤ Hi up to the bootstrap's noise
	Level  float64 // confidence level, e.g. 0.95
}

// Below reports whether the interval lies entirely below 0.
func (c CI) Below() bool { return c.Hi < 0 }

// Above reports whether the interval lies entirely above 0.
func (c CI) Above() bool { return c.Lo > 0 }

// NonInferior reports whether the interval's lower bound exceeds −margin,
// the non-inferiority test of a difference "candidate − baseline" where
// larger is better (margin 5 with relative differences in percent: the
// candidate loses less than 5%).
func (c CI) NonInferior(margin float64) bool { return c.Lo > -margin }

// Mean returns the mean of x, computed as x_0 + Σ(x_i − x_0)/n in index
// order so that constant data give their value exactly. It returns NaN for
// an empty x.
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v - x[0]
	}
	return x[0] + s/float64(len(x))
}

// Diff returns the paired differences a_i − b_i. ok is false when the
// lengths differ, the slices are empty, or a value is not finite.
func Diff(a, b []float64) (d []float64, ok bool) {
	if len(a) != len(b) || len(a) == 0 {
		return nil, false
	}
	d = make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
		if !finite(d[i]) {
			return nil, false
		}
	}
	return d, true
}

// RelDiff returns the paired relative differences (a_i − b_i)/b_i × 100,
// in percent. ok is false when the lengths differ, the slices are empty, a
// b_i is 0, or a value is not finite.
func RelDiff(a, b []float64) (d []float64, ok bool) {
	if len(a) != len(b) || len(a) == 0 {
		return nil, false
	}
	d = make([]float64, len(a))
	for i := range a {
		if b[i] == 0 {
			return nil, false
		}
		d[i] = (a[i] - b[i]) / b[i] * 100
		if !finite(d[i]) {
			return nil, false
		}
	}
	return d, true
}

// BootstrapMean returns the percentile-bootstrap confidence interval, at
// confidence level, of the mean of x from resamples resamples drawn with
// src. Each resample draws len(x) indices uniformly with replacement (in
// order, one src draw each via rand.Rand.IntN); its mean is Mean of the
// resample, shifted by the resample's own first value, so a resample of one
// repeated value has exactly that value (shifted by x's first value
// instead, a resample of zeros could come out 5.6e-17 and turn a bound
// that is 0 into one "entirely above 0"). The bounds are the empirical
// α/2 and 1 − α/2 quantiles (stat.Empirical) of the sorted resample means,
// α = 1 − level.
//
// ok is false when x has fewer than 2 values or a non-finite one,
// resamples < 1, level is outside (0, 1), or src is nil.
func BootstrapMean(x []float64, resamples int, level float64, src rand.Source) (ci CI, ok bool) {
	if len(x) < 2 || resamples < 1 || !(level > 0 && level < 1) || src == nil {
		return CI{}, false
	}
	for _, v := range x {
		if !finite(v) {
			return CI{}, false
		}
	}
	r := rand.New(src)
	n := len(x)
	means := make([]float64, resamples)
	for b := range means {
		first := x[r.IntN(n)]
		s := 0.0
		for range n - 1 {
			s += x[r.IntN(n)] - first
		}
		means[b] = first + s/float64(n)
	}
	slices.Sort(means)
	alpha := 1 - level
	return CI{
		Mean:  Mean(x),
		Lo:    stat.Quantile(alpha/2, stat.Empirical, means, nil),
		Hi:    stat.Quantile(1-alpha/2, stat.Empirical, means, nil),
		Level: level,
	}, true
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Median returns the median of x: the middle value of the sorted sample,
// or the mean (a+b)/2 of the middle two for an even length. x is not
// modified. It returns NaN for an empty x.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// CV returns the sample coefficient of variation of x, s/x̄ with
// x̄ = Σx_i/n and s² = Σ(x_i − x̄)²/(n − 1), both summed in index order.
// It returns NaN for fewer than two values or a zero mean.
func CV(x []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	m, ss := 0.0, 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	if m == 0 {
		return math.NaN()
	}
	return math.Sqrt(ss/float64(len(x)-1)) / m
}
