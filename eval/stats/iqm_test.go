package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIQM(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8}, 4.5},      // cut 2 each end: mean of 3…6
		{[]float64{8, 1, 7, 2, 6, 3, 5, 4}, 4.5},      // order does not matter
		{[]float64{5, 4, 3, 2, 1}, 3},                 // cut 1: mean of 2, 3, 4
		{[]float64{1, 2, 3, 100}, 2.5},                // the outlier is cut
		{[]float64{1, 2, 3}, 2},                       // nothing cut below 4
		{[]float64{7}, 7},                             //
		{[]float64{1, 1, 1, 1, 1, 1, 1, 1, 9, -9}, 1}, // cut 2 each end
	} {
		in := slices.Clone(tc.x)
		if got := IQM(tc.x); got != tc.want {
			t.Errorf("IQM(%v) = %v, want %v", tc.x, got, tc.want)
		}
		if !slices.Equal(in, tc.x) {
			t.Errorf("IQM modified its input: %v", tc.x)
		}
	}
	if !math.IsNaN(IQM(nil)) {
		t.Error("IQM(nil) is not NaN")
	}
}

func TestSeedIQM(t *testing.T) {
	// Seed means 1, 2, 3, 10: the IQM keeps 2 and 3.
	x := [][]float64{{0, 2}, {2, 2}, {1, 5}, {10, 10}}
	if got, ok := SeedIQM(x); !ok || got != 2.5 {
		t.Errorf("SeedIQM = %v, %v, want 2.5", got, ok)
	}
	for _, bad := range [][][]float64{nil, {{}}, {{1, 2}, {3}}, {{1, math.NaN()}}, {{math.Inf(1)}}} {
		if _, ok := SeedIQM(bad); ok {
			t.Errorf("SeedIQM(%v) ok", bad)
		}
	}
}

// TestBootstrapSeedIQMOneSeed: with one seed the seed-level interval is
// the placement bootstrap of today's protocol, bit for bit.
func TestBootstrapSeedIQMOneSeed(t *testing.T) {
	r := rand.New(src("test/one-seed"))
	x := make([]float64, 10)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	want, ok1 := BootstrapMean(x, 2000, 0.95, src("test/boot"))
	got, ok2 := BootstrapSeedIQM([][]float64{x}, 2000, 0.95, src("test/boot"))
	if !ok1 || !ok2 || got != want {
		t.Fatalf("one seed: %+v (%v), want BootstrapMean's %+v (%v)", got, ok2, want, ok1)
	}
}

// freq counts the share of each value among the resampled statistics.
func freq(t *testing.T, x [][]float64, resamples int) map[float64]float64 {
	t.Helper()
	th, ok := seedResamples(x, resamples, 0.95, src("test/freq"))
	if !ok {
		t.Fatal("not ok")
	}
	out := map[float64]float64{}
	for _, v := range th {
		out[v] += 1 / float64(resamples)
	}
	return out
}

// checkFreq compares resampled shares with the exact bootstrap
// distribution, within 4 standard errors of a share.
func checkFreq(t *testing.T, got, want map[float64]float64, resamples int) {
	t.Helper()
	for v, p := range want {
		if se := math.Sqrt(p * (1 - p) / float64(resamples)); math.Abs(got[v]-p) > 4*se {
			t.Errorf("P(θ* = %v) = %.4f, want %.4f ± %.4f", v, got[v], p, 4*se)
		}
	}
	for v := range got {
		if _, ok := want[v]; !ok {
			t.Errorf("θ* = %v, not in the support", v)
		}
	}
}

// TestBootstrapSeedIQMByHand checks the resampling against bootstrap
// distributions enumerated by hand.
func TestBootstrapSeedIQMByHand(t *testing.T) {
	const B = 20000
	// Two seeds on one placement: draws (0,0), (0,1), (1,0), (1,1); the IQM
	// of two values is their mean.
	x := [][]float64{{0}, {1}}
	checkFreq(t, freq(t, x, B), map[float64]float64{0: 0.25, 0.5: 0.5, 1: 0.25}, B)
	ci, ok := BootstrapSeedIQM(x, B, 0.95, src("test/ci"))
	if !ok || ci.Mean != 0.5 || ci.Lo != 0 || ci.Hi != 1 {
		t.Errorf("two seeds: %+v, want 0.5 [0, 1]", ci)
	}
	// Four seeds 0, 0, 0, 10: the IQM (the middle two of the sorted four)
	// is 10 when three or four draws are the 10 (13/256), 5 when two are
	// (54/256), else 0; the point estimate is 0 where the mean is 2.5.
	x = [][]float64{{0}, {0}, {0}, {10}}
	checkFreq(t, freq(t, x, B), map[float64]float64{0: 189.0 / 256, 5: 54.0 / 256, 10: 13.0 / 256}, B)
	ci, _ = BootstrapSeedIQM(x, B, 0.95, src("test/ci"))
	if ci.Mean != 0 || ci.Lo != 0 || ci.Hi != 10 {
		t.Errorf("four seeds: %+v, want 0 [0, 10]", ci)
	}
	// Two seeds × two placements, rows {0, 2} and {2, 4}: the placement
	// draw gives row 0 a mean a ∈ {0, 1, 1, 2} and row 1 a + 2, the seed
	// draw adds {0, 1, 1, 2} to a; θ* = a + that, 0…4 with weights
	// 1, 4, 6, 4, 1 over 16. Resampling only seeds or only placements
	// would never reach 0 or 4.
	x = [][]float64{{0, 2}, {2, 4}}
	checkFreq(t, freq(t, x, B), map[float64]float64{0: 1.0 / 16, 1: 4.0 / 16, 2: 6.0 / 16, 3: 4.0 / 16, 4: 1.0 / 16}, B)
	ci, _ = BootstrapSeedIQM(x, B, 0.95, src("test/ci"))
	if ci.Mean != 2 || ci.Lo != 0 || ci.Hi != 4 {
		t.Errorf("2×2: %+v, want 2 [0, 4]", ci)
	}
}

func TestBootstrapSeedIQMDeterminism(t *testing.T) {
	r := rand.New(src("test/det"))
	x := make([][]float64, 5)
	for s := range x {
		for range 10 {
			x[s] = append(x[s], r.NormFloat64()+float64(s))
		}
	}
	a, _ := BootstrapSeedIQM(x, 1000, 0.95, src("test/a"))
	b, _ := BootstrapSeedIQM(x, 1000, 0.95, src("test/a"))
	c, _ := BootstrapSeedIQM(x, 1000, 0.95, src("test/c"))
	if a != b {
		t.Errorf("same source: %+v and %+v", a, b)
	}
	if a.Lo == c.Lo && a.Hi == c.Hi {
		t.Errorf("different sources, same interval %+v", a)
	}
	if !(a.Lo <= a.Mean && a.Mean <= a.Hi) {
		t.Errorf("interval %+v does not hold its estimate", a)
	}
}

func TestBootstrapSeedIQMRefuses(t *testing.T) {
	ok2 := [][]float64{{1, 2}, {3, 4}}
	for _, tc := range []struct {
		name string
		x    [][]float64
		res  int
		lvl  float64
		src  rand.Source
	}{
		{"one value", [][]float64{{1}}, 100, 0.95, src("x")},
		{"ragged", [][]float64{{1, 2}, {3}}, 100, 0.95, src("x")},
		{"NaN", [][]float64{{1, math.NaN()}}, 100, 0.95, src("x")},
		{"no resamples", ok2, 0, 0.95, src("x")},
		{"level 1", ok2, 100, 1, src("x")},
		{"nil source", ok2, 100, 0.95, nil},
	} {
		if _, ok := BootstrapSeedIQM(tc.x, tc.res, tc.lvl, tc.src); ok {
			t.Errorf("%s: ok", tc.name)
		}
	}
}
