package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"streamscale/rng"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

func src(name string) rand.Source { return rng.Source(1, name) }

func TestBootstrapConstantIsDegenerate(t *testing.T) {
	for _, c := range []float64{0, 0.1, -3.7, 1e6} {
		x := slices.Repeat([]float64{c}, 10)
		ci, ok := BootstrapMean(x, 10000, 0.95, src("test/const"))
		if !ok {
			t.Fatalf("c=%v: not ok", c)
		}
		if ci.Mean != c || ci.Lo != c || ci.Hi != c {
			t.Errorf("c=%v: got %+v, want degenerate interval at c", c, ci)
		}
	}
}

// TestBootstrapMatchesTInterval checks the bootstrap against the analytic
// interval of a symmetric distribution: for n = 400 normal draws the
// percentile interval of the mean is x̄ ± t·s/√n up to O(1/n) and the
// Monte-Carlo error of 10,000 resamples (≈1% of the half-width).
func TestBootstrapMatchesTInterval(t *testing.T) {
	r := rand.New(src("test/normal"))
	const n = 400
	x := make([]float64, n)
	for i := range x {
		x[i] = 3 + 2*r.NormFloat64()
	}
	ci, ok := BootstrapMean(x, 10000, 0.95, src("test/boot"))
	if !ok {
		t.Fatal("not ok")
	}
	m, s := stat.MeanStdDev(x, nil)
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975) * s / math.Sqrt(n)
	tol := 0.05 * half
	if math.Abs(ci.Mean-m) > 1e-12 {
		t.Errorf("mean %v, want %v", ci.Mean, m)
	}
	if math.Abs(ci.Lo-(m-half)) > tol || math.Abs(ci.Hi-(m+half)) > tol {
		t.Errorf("bootstrap [%.4f, %.4f], t-interval [%.4f, %.4f], tolerance %.4f", ci.Lo, ci.Hi, m-half, m+half, tol)
	}
}

// TestBootstrapCoverage checks that the 95% interval covers the true mean
// of a symmetric distribution in about 95% of 400 independent samples of
// 30 (the percentile interval under-covers slightly at small n; accept
// 90–98%).
func TestBootstrapCoverage(t *testing.T) {
	r := rand.New(src("test/coverage"))
	const trials, n = 400, 30
	x := make([]float64, n)
	hit := 0
	for i := range trials {
		for j := range x {
			x[j] = r.Float64()*2 - 1 // uniform on [−1, 1], mean 0
		}
		ci, ok := BootstrapMean(x, 2000, 0.95, rng.Source(uint64(i), "test/coverage/boot"))
		if !ok {
			t.Fatal("not ok")
		}
		if ci.Lo <= 0 && 0 <= ci.Hi {
			hit++
		}
	}
	if cov := float64(hit) / trials; cov < 0.90 || cov > 0.98 {
		t.Errorf("coverage %.3f, want ≈0.95", cov)
	}
}

// TestBootstrapReference holds BootstrapMean against a slow, obviously
// correct reference that materialises every resample.
func TestBootstrapReference(t *testing.T) {
	x := []float64{4, -1, 2.5, 7, 0, 3, 3, 10, -2}
	got, ok := BootstrapMean(x, 999, 0.9, src("test/ref"))
	if !ok {
		t.Fatal("not ok")
	}
	r := rand.New(src("test/ref"))
	means := make([]float64, 999)
	for b := range means {
		res := make([]float64, len(x))
		for i := range res {
			res[i] = x[r.IntN(len(x))]
		}
		means[b] = stat.Mean(res, nil)
	}
	slices.Sort(means)
	lo := means[int(math.Ceil(0.05*999))-1]
	hi := means[int(math.Ceil(0.95*999))-1]
	if math.Abs(got.Lo-lo) > 1e-12 || math.Abs(got.Hi-hi) > 1e-12 {
		t.Errorf("got [%v, %v], reference [%v, %v]", got.Lo, got.Hi, lo, hi)
	}
}

func TestBootstrapDeterminism(t *testing.T) {
	x := []float64{1, 5, 2, 8, 3, 9, 4, 4, 6, 0}
	a, _ := BootstrapMean(x, 10000, 0.95, src("eval/bootstrap"))
	b, _ := BootstrapMean(x, 10000, 0.95, src("eval/bootstrap"))
	if a != b {
		t.Errorf("same stream gave %+v and %+v", a, b)
	}
	c, _ := BootstrapMean(x, 10000, 0.95, rng.Source(2, "eval/bootstrap"))
	if a == c {
		t.Errorf("different seeds gave the same interval %+v", a)
	}
}

func TestBootstrapRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		x     []float64
		b     int
		level float64
		src   rand.Source
	}{
		{"empty", nil, 100, 0.95, src("x")},
		{"one", []float64{1}, 100, 0.95, src("x")},
		{"nan", []float64{1, math.NaN()}, 100, 0.95, src("x")},
		{"inf", []float64{1, math.Inf(1)}, 100, 0.95, src("x")},
		{"no resamples", []float64{1, 2}, 0, 0.95, src("x")},
		{"level 1", []float64{1, 2}, 10, 1, src("x")},
		{"level nan", []float64{1, 2}, 10, math.NaN(), src("x")},
		{"nil source", []float64{1, 2}, 10, 0.95, nil},
	} {
		if _, ok := BootstrapMean(tc.x, tc.b, tc.level, tc.src); ok {
			t.Errorf("%s: ok, want failure", tc.name)
		}
	}
}

func TestDiffs(t *testing.T) {
	d, ok := RelDiff([]float64{110, 90, 100}, []float64{100, 100, 100})
	if !ok || !slices.Equal(d, []float64{10, -10, 0}) {
		t.Errorf("RelDiff = %v, %v", d, ok)
	}
	if _, ok := RelDiff([]float64{1}, []float64{0}); ok {
		t.Error("RelDiff with a zero baseline: ok")
	}
	if _, ok := RelDiff([]float64{1, 2}, []float64{1}); ok {
		t.Error("RelDiff with unequal lengths: ok")
	}
	d, ok = Diff([]float64{0.5, 0.25}, []float64{0.25, 0.25})
	if !ok || !slices.Equal(d, []float64{0.25, 0}) {
		t.Errorf("Diff = %v, %v", d, ok)
	}
	if _, ok := Diff(nil, nil); ok {
		t.Error("Diff of nothing: ok")
	}
}

func TestCIPredicates(t *testing.T) {
	ci := CI{Mean: -3, Lo: -4.9, Hi: -1}
	if !ci.Below() || ci.Above() || !ci.NonInferior(5) || ci.NonInferior(4) {
		t.Errorf("predicates of %+v wrong", ci)
	}
}

// BenchmarkBootstrapMean measures one interval of the evaluation's size:
// 10 pairs, 10,000 resamples.
func BenchmarkBootstrapMean(b *testing.B) {
	x := []float64{1, 5, 2, 8, 3, 9, 4, 4, 6, 0}
	for b.Loop() {
		BootstrapMean(x, 10000, 0.95, src("eval/bootstrap"))
	}
}

// TestBootstrapZeroResample: a resample made of one repeated value has
// that value exactly, so the lower bound of differences whose smallest is
// 0 is 0 and not "entirely above 0". Three placements' violation
// differences (pp) ≈ 1/3, 5/6 and 0: the all-zero resample (probability
// 1/27) is the 0.1% quantile; shifted by x[0], it came out 5.6e-17.
func TestBootstrapZeroResample(t *testing.T) {
	// The differences as eval computes them from three runs of 600
	// intervals: 2/600 − 0, 6/600 − 1/600 and 0 − 0, in percentage points.
	x := []float64{}
	for _, v := range [][2]float64{{2, 0}, {6, 1}, {0, 0}} {
		x = append(x, (v[0]/600-v[1]/600)*100)
	}
	ci, ok := BootstrapMean(x, 20000, 0.998, rand.NewPCG(1, 2))
	if !ok || ci.Lo != 0 || ci.Above() {
		t.Errorf("CI %+v: want a lower bound of exactly 0", ci)
	}
}

// TestMedian: odd and even lengths, unsorted input left as it was, NaN
// for an empty sample.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, -1, 7, 7}, 3},
		{[]float64{30, 10}, 20},
	} {
		in := slices.Clone(c.x)
		if got := Median(c.x); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, c.want)
		}
		if !slices.Equal(in, c.x) {
			t.Errorf("Median reordered its input: %v, was %v", c.x, in)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

// TestCV: the sample CV against gonum's standard deviation and mean;
// constant data give 0; fewer than two values or a zero mean give NaN.
func TestCV(t *testing.T) {
	x := []float64{2, 4, 4, 4, 5, 5, 7, 9}
	want := stat.StdDev(x, nil) / stat.Mean(x, nil)
	if got := CV(x); math.Abs(got-want) > 1e-12 {
		t.Errorf("CV(%v) = %v, want %v", x, got, want)
	}
	if got := CV([]float64{3, 3, 3}); got != 0 {
		t.Errorf("CV of constant data = %v, want 0", got)
	}
	for _, x := range [][]float64{nil, {1}, {-1, 1}} {
		if got := CV(x); !math.IsNaN(got) {
			t.Errorf("CV(%v) = %v, want NaN", x, got)
		}
	}
}
