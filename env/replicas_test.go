package env

import (
	"math"
	"testing"
)

func TestRouteShares(t *testing.T) {
	for _, tc := range []struct {
		name       string
		localFirst bool
		a, b       []float64
		sa, sb     []int
		want       [][]float64
	}{
		{"single", true, []float64{1}, []float64{1}, []int{0}, []int{3}, [][]float64{{1}}},
		{"co-located halves stay local", true, []float64{0.5, 0.5}, []float64{0.5, 0.5}, []int{0, 1}, []int{1, 0},
			[][]float64{{0, 0.5}, {0.5, 0}}},
		{"local first, rest north-west", true, []float64{0.6, 0.4}, []float64{0.3, 0.7}, []int{0, 1}, []int{0, 2},
			[][]float64{{0.3, 0.3}, {0, 0.4}}},
		{"fan-in, local first", true, []float64{0.25, 0.25, 0.5}, []float64{1}, []int{0, 1, 2}, []int{1}, [][]float64{{0.25}, {0.25}, {0.5}}},
		{"single, by shares", false, []float64{1}, []float64{1}, []int{0}, []int{3}, [][]float64{{1}}},
		// by shares, co-location does not matter: each sender spreads by the receivers' shares
		{"co-located halves, by shares", false, []float64{0.5, 0.5}, []float64{0.5, 0.5}, []int{0, 1}, []int{1, 0},
			[][]float64{{0.25, 0.25}, {0.25, 0.25}}},
		{"uneven, by shares", false, []float64{0.6, 0.4}, []float64{0.3, 0.7}, []int{0, 1}, []int{0, 2},
			[][]float64{{0.18, 0.42}, {0.12, 0.28}}},
		{"fan-in, by shares", false, []float64{0.25, 0.25, 0.5}, []float64{1}, []int{0, 1, 2}, []int{1}, [][]float64{{0.25}, {0.25}, {0.5}}},
	} {
		F := routeShares(tc.a, tc.b, tc.sa, tc.sb, tc.localFirst)
		in := make([]float64, len(tc.b))
		for i := range tc.want {
			var row float64
			for j := range tc.want[i] {
				row += F[i][j]
				in[j] += F[i][j]
				if math.Abs(F[i][j]-tc.want[i][j]) > 1e-12 {
					t.Errorf("%s: F = %v, want %v", tc.name, F, tc.want)
				}
			}
			if math.Abs(row-tc.a[i]) > 1e-12 {
				t.Errorf("%s: sender %d sends %v, want %v", tc.name, i, row, tc.a[i])
			}
		}
		for j := range in {
			if math.Abs(in[j]-tc.b[j]) > 1e-12 {
				t.Errorf("%s: receiver %d gets %v, want %v", tc.name, j, in[j], tc.b[j])
			}
		}
	}
}

// chain is a two-task application (a → b → sink) with execution demand h
// MI per event on servers of 2 cores at 1,000 MIPS each, so one event costs h
// ms of CPU.
func chain(h float64, replicasA []Replica, req RequestCosts, rate float64) Config {
	app := App{Name: "chain", SLOMS: 1000, Sources: []int{0}, Sinks: []int{1},
		Tasks: []Task{{Name: "a", MIPSPerEvent: h, Selectivity: 1, OutBytes: 100, MemoryMB: 1}, {Name: "b", MIPSPerEvent: h, Selectivity: 1, OutBytes: 100, MemoryMB: 1}}, Edges: []Edge{{0, 1}}}
	net := HexGrid(1, 3, 1e9, 1)
	var servers []Server
	for i := 0; i < 3; i++ {
		servers = append(servers, Server{Name: "w", CPU: 2000, MIPS: 2000, RAMMB: 1000, Switch: i})
	}
	return Config{App: app, Network: net, Servers: servers,
		Replicas: [][]Replica{replicasA, {{Server: 2, Share: 1}}},
		Workload: constRate(rate, 60), InitialCPU: 1000, MinCPU: 100, MaxCPU: 1000, Requests: req}
}

// TestRequestCostsLimitThroughput checks Eq. 1: a saturated replica
// executes 1 s / (τ + β) events per second when every event sends one
// remote request, and the worker metrics report the load it carries.
func TestRequestCostsLimitThroughput(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  RequestCosts
		want float64 // events/s of task a at saturation
	}{
		{"no request cost", RequestCosts{}, 1000 / 0.4},
		{"β = 275 µs", RequestCosts{BetaUS: 275}, 1e6 / (400 + 275)},
		{"β and γ", RequestCosts{BetaUS: 275, GammaUS: 51500}, (1e6 - 51500) / (400 + 275)},
	} {
		cfg := chain(0.4, []Replica{{Server: 0, Share: 1}}, tc.req, 5000)
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(0)
		var info Info
		for s := 0; s < 20; s++ {
			var sr StepResult
			sr, _ = e.Step(Action{Targets: []float64{1000, 1000}})
			info = sr.Info
		}
		got := info.Workers[0].Executions[0]
		if math.Abs(got-tc.want) > 0.002*tc.want {
			t.Errorf("%s: %v executions/s, want %v", tc.name, got, tc.want)
		}
		w := info.Workers[0]
		if tc.req.BetaUS > 0 && (w.RemoteDestinations != 1 || math.Abs(w.RemoteRequests-got) > 1e-6*got || w.LocalRequests != 0) {
			t.Errorf("%s: worker metrics %+v", tc.name, w)
		}
		// A saturated worker carries its whole budget (1 core = 10⁶ µs/s).
		if math.Abs(w.LoadUS-1e6) > 0.003e6 {
			t.Errorf("%s: load %v µs/s, want 1e6", tc.name, w.LoadUS)
		}
		checkInvariants(t, e)
	}
}

// TestReplicasSpreadLoad runs task a as two replicas: with the task's CPU
// split between two servers, each executes half the events, requests to b
// from the replica on b's server stay local, and events are conserved.
func TestReplicasSpreadLoad(t *testing.T) {
	cfg := chain(0.4, []Replica{{Server: 0, Share: 0.5}, {Server: 2, Share: 0.5}}, RequestCosts{AlphaUS: 38.5, BetaUS: 275}, 1000)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(0)
	var info Info
	for s := 0; s < 30; s++ {
		var sr StepResult
		sr, _ = e.Step(Action{Targets: []float64{1000, 1000}})
		info = sr.Info
		checkInvariants(t, e)
	}
	if a0, a2 := info.Workers[0].Executions[0], info.Workers[2].Executions[0]; math.Abs(a0-500) > 1 || math.Abs(a2-500) > 1 {
		t.Fatalf("replica executions %v and %v, want 500 each", a0, a2)
	}
	if l, r := info.Workers[2].LocalRequests, info.Workers[0].RemoteRequests; math.Abs(l-500) > 1 || math.Abs(r-500) > 1 {
		t.Fatalf("local %v remote %v, want 500 each", l, r)
	}
	if math.Abs(info.Throughput-1000) > 1 || info.Violated {
		t.Fatalf("throughput %v violated %v", info.Throughput, info.Violated)
	}
	// Bad replica sets are refused.
	for _, bad := range [][]Replica{{{Server: 0, Share: 0.5}}, {{Server: 9, Share: 1}}, {{Server: 0, Share: -1}, {Server: 1, Share: 2}}} {
		c := chain(0.4, bad, RequestCosts{}, 10)
		if _, err := New(c); err == nil {
			t.Errorf("replicas %v accepted", bad)
		}
	}
}

// TestReplicasMatchPerEvent holds the fluid core against the per-event
// reference with a task split over three servers and request costs.
func TestReplicasMatchPerEvent(t *testing.T) {
	w := make(rates, 120)
	for i := range w {
		w[i] = 300 + 250*math.Sin(float64(i)/10)
	}
	mk := func(mode Mode) *Env {
		cfg := chain(1.5, []Replica{{Server: 0, Share: 0.5}, {Server: 1, Share: 0.3}, {Server: 2, Share: 0.2}}, RequestCosts{AlphaUS: 38.5, BetaUS: 275, GammaUS: 20000}, 0)
		cfg.Workload = w
		cfg.App.SLOMS = 300
		cfg.Mode = mode
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(0)
		return e
	}
	fe, re := mk(Fluid), mk(PerEvent)
	close := 0
	for s := range w {
		tg := []float64{700 + float64(s%5)*60, 500}
		sr, _ := fe.Step(Action{Targets: tg})
		fi := sr.Info
		sb, _ := re.Step(Action{Targets: tg})
		ri := sb.Info
		if math.Abs(fi.P95MS-ri.P95MS) <= 10+0.05*ri.P95MS {
			close++
		} else {
			t.Logf("step %d: fluid %.1f ref %.1f (rate %.0f)", s, fi.P95MS, ri.P95MS, fi.OfferedRate)
		}
	}
	if close < len(w)*95/100 {
		t.Fatalf("p95 within tolerance on %d of %d intervals", close, len(w))
	}
}
