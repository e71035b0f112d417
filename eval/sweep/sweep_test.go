package sweep

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/runner"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{2, 2, 2, 9}, 2},
	} {
		in := append([]float64(nil), tc.x...)
		if got := Median(tc.x); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.x[i] {
				t.Fatalf("Median modified its input: %v", tc.x)
			}
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

// static holds every task at its millicores.
type static float64

var _ runner.Factory = static(1)

func (s static) String() string                           { return "static" }
func (static) Horizontal() bool                           { return false }
func (static) Config(base env.Config) (env.Config, error) { return base, nil }
func (s static) Build(env.Config) (agents.Actor, error) {
	c, err := agents.NewStatic(float64(s))
	if err != nil {
		return agents.Actor{}, err
	}
	return agents.Vertical(c), nil
}

type flat int

func (f flat) Len() int       { return int(f) }
func (flat) Rate(int) float64 { return 3000 }

func plan(grid ...float64) Plan {
	p := Plan{Profile: "etl", Trace: "flat", Workload: flat(50), Scenario: "paper", Grid: grid,
		Placements: Placements(2), Seed: 1, Steps: 30}
	for _, c := range grid {
		p.Static = append(p.Static, static(c))
	}
	return p
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Plan
		want string
	}{
		{plan(), "grid is empty"},
		{plan(900, 500), "strictly ascending"},
		{plan(500, 500), "strictly ascending"},
		{plan(-1), "finite number > 0"},
		{plan(math.Inf(1)), "finite number > 0"},
		{func() Plan { p := plan(500); p.Placements = nil; return p }(), "no placements"},
		{func() Plan { p := plan(500, 600); p.Static = p.Static[:1]; return p }(), "1 controllers for 2 grid points"},
	} {
		if err := tc.p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.p.Grid, err, tc.want)
		}
	}
}

// TestExecuteAggregates holds the points against the rows: the violation
// rate is the placements' mean, and the p95 ratio compares the smallest
// compliant point with the largest.
func TestExecuteAggregates(t *testing.T) {
	p := plan(500, 1000, 4000)
	rows, sum, err := Execute(context.Background(), p, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || len(sum.Points) != 3 {
		t.Fatalf("%d rows, %d points", len(rows), len(sum.Points))
	}
	for g, pt := range sum.Points {
		a, b := rows[2*g], rows[2*g+1]
		if pt.CPUMillicores != p.Grid[g] || a.CPUMillicores != p.Grid[g] || a.PlacementSeed != 101 || b.PlacementSeed != 102 {
			t.Errorf("point %d %+v, rows %+v %+v", g, pt, a, b)
		}
		if float64(pt.ViolationRate) != (a.ViolationRate+b.ViolationRate)/2 {
			t.Errorf("point %d: violation rate %v, rows %v %v", g, pt.ViolationRate, a.ViolationRate, b.ViolationRate)
		}
		if m := float64(pt.MeanP95MS); math.Abs(m-(a.MeanP95MS+b.MeanP95MS)/2) > 1e-9*m {
			t.Errorf("point %d: mean p95 %v, rows %v %v", g, m, a.MeanP95MS, b.MeanP95MS)
		}
	}
	if sum.SmallestCompliantCPU != nil {
		var want float64
		for _, pt := range sum.Points {
			if pt.ViolationRate <= ComplianceTarget {
				want = pt.CPUMillicores
				g := slices.Index(p.Grid, want)
				if float64(sum.P95Ratio) != float64(sum.MedianP95Rel[g]) {
					t.Errorf("p95 ratio %v, its point's relative median %v", sum.P95Ratio, sum.MedianP95Rel[g])
				}
				if len(sum.PlacementP95Ratios) != 2 {
					t.Fatalf("placement ratios %v", sum.PlacementP95Ratios)
				}
				for j, r := range sum.PlacementP95Ratios {
					if want := rows[2*g+j].MedianP95MS / rows[4+j].MedianP95MS; float64(r) != want {
						t.Errorf("placement %d ratio %v, want %v", j, r, want)
					}
				}
				break
			}
		}
		if *sum.SmallestCompliantCPU != want {
			t.Errorf("smallest compliant %v, want %v", *sum.SmallestCompliantCPU, want)
		}
	} else if !math.IsNaN(float64(sum.P95Ratio)) || sum.PlacementP95Ratios != nil {
		t.Errorf("p95 ratio %v (placements %v) without a compliant point", sum.P95Ratio, sum.PlacementP95Ratios)
	}
}

// TestRelativeMedianDividesFloorsOut holds the sweep's p95 ratio to what
// it is for: two placements on network floors of 30 and 40 ms, neither of
// whose latencies moves, give a relative median of 1, while the pooled
// median moves from one floor to the other when the spread of one of them
// changes (the artefact the relative statistic removes).
func TestRelativeMedianDividesFloorsOut(t *testing.T) {
	lavish := [][]float64{{30, 30, 30, 30}, {40, 40, 40}}
	tight := [][]float64{{30, 30, 30}, {40, 40, 40, 40}}
	floor := []float64{30, 40}
	pooled := func(s [][]float64) float64 { return Median(slices.Concat(s...)) }
	if a, b := pooled(lavish), pooled(tight); a != 30 || b != 40 {
		t.Fatalf("pooled medians %v, %v: the example no longer shows the artefact", a, b)
	}
	for _, s := range [][][]float64{lavish, tight} {
		if r := RelativeMedian(s, floor); r != 1 {
			t.Errorf("relative median %v of %v, want 1", r, s)
		}
	}
	if r := RelativeMedian([][]float64{{33, 36, 39}, {44, 44, 44}}, floor); math.Abs(r-1.1) > 1e-12 {
		t.Errorf("relative median %v, want 1.1", r)
	}
	if r := RelativeMedian(nil, nil); !math.IsNaN(r) {
		t.Errorf("relative median of nothing %v, want NaN", r)
	}
}

// TestBusyMedianRel holds the busy-interval statistic to hand-computed
// values: with share 0.5 the busy intervals of each placement are the
// upper half by offered rate, each divided by its placement's lavish
// median over the same intervals.
func TestBusyMedianRel(t *testing.T) {
	offered := [][]float64{{1, 4, 2, 3}, {10, 10, 30, 20}}
	lavish := [][]float64{{30, 32, 30, 28}, {40, 40, 44, 36}}
	tight := [][]float64{{30, 48, 31, 45}, {41, 40, 66, 54}}
	// Placement 0: cut 2 (sorted 1,2,3,4; index floor(0.5·3) = 1), busy t = 1, 2, 3:
	// floor median(32, 30, 28) = 30, ratios 1.6, 31/30, 1.5.
	// Placement 1: cut 10 (sorted 10,10,20,30), every t busy: floor median(40, 40, 44, 36) = 40,
	// ratios 1.025, 1, 1.65, 1.35. Median of the seven: 1.35.
	if r := BusyMedianRel(tight, lavish, offered, 0.5); math.Abs(r-1.35) > 1e-12 {
		t.Errorf("busy median %v, want 1.35", r)
	}
	if r := BusyMedianRel(lavish, lavish, offered, 0.1); math.Abs(r-1) > 1e-12 {
		t.Errorf("busy median of the lavish run itself %v, want 1", r)
	}
	if r := BusyMedianRel([][]float64{{1, 2}}, lavish[:1], offered[:1], 0.1); !math.IsNaN(r) {
		t.Errorf("busy median over runs of different lengths %v, want NaN", r)
	}
}
