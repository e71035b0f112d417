package vrebalance

import (
	"fmt"
	"slices"
	"testing"

	"streamscale/env"
)

type constRate float64

func (r constRate) Len() int         { return 100 }
func (r constRate) Rate(int) float64 { return float64(r) }

// tinyScenario is a chain of len(placement) tasks on servers of the given
// CPU capacities, all on one switch.
func tinyScenario(caps []float64, placement []int) env.Config {
	app := env.App{Name: "chain", SLOMS: 200, Sources: []int{0}, Sinks: []int{len(placement) - 1}}
	for k := range placement {
		app.Tasks = append(app.Tasks, env.Task{Name: fmt.Sprintf("t%d", k), MIPSPerEvent: 0.1, Selectivity: 1, OutBytes: 100, MemoryMB: 64})
		if k > 0 {
			app.Edges = append(app.Edges, env.Edge{From: k - 1, To: k})
		}
	}
	var servers []env.Server
	for i, c := range caps {
		servers = append(servers, env.Server{Name: fmt.Sprintf("s%d", i), CPU: c, MIPS: 2 * c, RAMMB: 65536})
	}
	return env.Config{App: app, Network: env.HexGrid(1, 2, 1e9, 1), Servers: servers, Placement: placement, Workload: constRate(1000)}
}

// TestShareOvercommit checks the proportional sharing of an over-committed
// server by hand: each task keeps 500 and the rest is shared in proportion
// to the demand above 500, rounded down to 50.
func TestShareOvercommit(t *testing.T) {
	// Server 0 (16,000) hosts tasks 0 and 1; server 1 (12,000) tasks 2–4.
	v, err := New(DefaultConfig(), tinyScenario([]float64{16000, 12000}, []int{0, 0, 1, 1, 1}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		x    []float64
		want []float64
		over bool
	}{
		{"fits", []float64{3000, 4000, 2000, 2000, 2000}, []float64{3000, 4000, 2000, 2000, 2000}, false},
		{"exactly full", []float64{8000, 8000, 4000, 4000, 4000}, []float64{8000, 8000, 4000, 4000, 4000}, false},
		// Server 0: rest 16,000 − 1,000 = 15,000 over demand 9,500 + 6,500 =
		// 16,000 (×0.9375): 8,906.25 → 8,900 and 6,093.75 → 6,050.
		{"two tasks", []float64{10000, 7000, 2000, 2000, 2000}, []float64{9400, 6550, 2000, 2000, 2000}, true},
		// Server 1: rest 12,000 − 1,500 = 10,500 over demand 9,500 + 0 +
		// 4,000 = 13,500 (×7/9): 7,388.9 → 7,350, 0, 3,111.1 → 3,100.
		{"three tasks, one at the minimum", []float64{1000, 1000, 10000, 500, 4500}, []float64{1000, 1000, 7850, 500, 3600}, true},
		{"both servers", []float64{10000, 7000, 10000, 500, 4500}, []float64{9400, 6550, 7850, 500, 3600}, true},
		{"clipped to bounds first", []float64{12000, 100, 500, 500, 500}, []float64{10000, 500, 500, 500, 500}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]float64, len(tc.x))
			over := v.share(tc.x, got)
			if !slices.Equal(got, tc.want) || over != tc.over {
				t.Fatalf("share(%v) = %v, over %v; want %v, over %v", tc.x, got, over, tc.want, tc.over)
			}
			load := []float64{got[0] + got[1], got[2] + got[3] + got[4]}
			if load[0] > 16000 || load[1] > 12000 {
				t.Fatalf("result %v over-commits: server loads %v", got, load)
			}
		})
	}
}

func TestTierBoundsQuantiles(t *testing.T) {
	ramp := make(rampW, 301) // controllertest.Rates 0, 1, …, 300
	for _, tc := range []struct {
		name string
		w    env.Workload
		qs   []float64
		want []float64
	}{
		{"tertiles of a ramp", ramp, []float64{1.0 / 3, 2.0 / 3}, []float64{100, 200}},
		{"median", ramp, []float64{0.5}, []float64{150}},
		{"constant workload: duplicates dropped", constRate(1000), []float64{1.0 / 3, 2.0 / 3}, []float64{1000}},
		{"idle workload: no bounds", constRate(0), []float64{0.5}, nil},
		{"no quantiles: one tier", ramp, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := make([]float64, tc.w.Len())
			for i := range xs {
				xs[i] = tc.w.Rate(i)
			}
			got := quantileBounds(xs, tc.qs)
			if len(got) != len(tc.want) {
				t.Fatalf("bounds %v, want %v", got, tc.want)
			}
			for i := range got {
				if d := got[i] - tc.want[i]; d > 1e-9 || d < -1e-9 {
					t.Fatalf("bounds %v, want %v", got, tc.want)
				}
			}
		})
	}
}

type rampW []float64

func (r rampW) Len() int           { return len(r) }
func (r rampW) Rate(i int) float64 { return float64(i) }
