package paired

import (
	"math"
	"testing"
)

func TestPickBest(t *testing.T) {
	cs := func(vc ...float64) []ControllerStats {
		var out []ControllerStats
		for i := 0; i < len(vc); i += 2 {
			out = append(out, ControllerStats{ViolationRateMean: Num(vc[i]), MeanCPU: Num(vc[i+1])})
		}
		return out
	}
	all := func(int) bool { return true }
	for _, tc := range []struct {
		name string
		cs   []ControllerStats
		use  func(int) bool
		want int
	}{
		{"least CPU within budget", cs(0.01, 5000, 0.015, 4000, 0.5, 1000), all, 1},
		{"within budget beats cheaper violator", cs(0.5, 1000, 0.019, 9000), all, 1},
		{"none within: fewest violations", cs(0.5, 1000, 0.3, 9000, 0.3, 8000), all, 2},
		{"tie keeps the earlier", cs(0.01, 4000, 0.01, 4000), all, 0},
		{"NaN skipped", cs(math.NaN(), 1, 0.01, 4000), all, 1},
		{"filtered", cs(0.01, 1000, 0.01, 4000), func(i int) bool { return i == 1 }, 1},
		{"none allowed", cs(0.01, 1000), func(int) bool { return false }, -1},
	} {
		if got := pickBest(tc.cs, 0.02, tc.use); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDominance(t *testing.T) {
	e := func(m, lo, hi float64) Estimate { return Estimate{Mean: Num(m), CILow: Num(lo), CIHigh: Num(hi)} }
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		v, u Estimate
		want string
	}{
		{"fewer violations, CPU within margin", e(-1, -2, -0.5), e(1, 0, 1.9), Dominates},
		{"fewer violations, CPU over margin", e(-1, -2, -0.5), e(3, 1, 4), Neither},
		{"less CPU, violations within margin", e(0, -0.05, 0.09), e(-10, -12, -8), Dominates},
		{"less CPU, more violations", e(1, 0.5, 1.5), e(-10, -12, -8), Neither},
		{"more violations, CPU not lower", e(1, 0.5, 1.5), e(0, -1, 1), Dominated},
		{"more CPU, violations not lower", e(0, -0.05, 0.05), e(10, 8, 12), Dominated},
		{"undecided", e(0, -1, 1), e(0, -1, 1), Neither},
		{"undefined", e(0, nan, nan), e(-10, -12, -8), Neither},
	} {
		if got := dominance(tc.v, tc.u); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
