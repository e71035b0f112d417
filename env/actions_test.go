package env

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestActionDeltas checks the action-set option: the zero value is the
// paper's set, another set is applied by Step and reported by Spaces, and
// the zero value leaves the encoded Config as before the option existed.
func TestActionDeltas(t *testing.T) {
	w := rates{1000, 1000, 1000, 1000}
	cfg, err := EdgeConfig("pred", 1, w)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Deltas(); got != DeltaMillicores {
		t.Fatalf("zero ActionDeltas: %v, want the paper's %v", got, DeltaMillicores)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "ActionDeltas") {
		t.Errorf("the zero action set is encoded (config hashes would change): %s", b)
	}
	set := [5]float64{-200, -50, 0, 50, 500}
	cfg.ActionDeltas = set
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Spaces().DeltaMillicores; !slices.Equal(got, set[:]) {
		t.Errorf("spaces report %v, want %v", got, set)
	}
	e.Reset(0)
	n := len(cfg.App.Tasks)
	up := make([]int, n)
	for k := range up {
		up[k] = 4 // +500
	}
	if _, err := e.Step(Action{Choices: up}); err != nil {
		t.Fatal(err)
	}
	down := make([]int, n)
	for k := range down {
		down[k] = 0 // −200 here, −500 in the paper's set
	}
	sr, err := e.Step(Action{Choices: down})
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range sr.Info.Requested {
		if r != 800 { // 500 → 1,000 → 800
			t.Fatalf("task %d: requested %v after +500 then the first choice, want 800 (set %v)", k, r, set)
		}
	}
}

func TestActionDeltasRefused(t *testing.T) {
	for _, tc := range []struct {
		set  [5]float64
		want string
	}{
		{[5]float64{-500, -50, 10, 50, 500}, "the middle choice is 10"},
		{[5]float64{-500, 50, 0, 50, 500}, "not strictly increasing"},
		{[5]float64{-500, -50, 0, 50, 20000}, "at most 9500"},
	} {
		cfg, err := EdgeConfig("pred", 1, rates{1000})
		if err != nil {
			t.Fatal(err)
		}
		cfg.ActionDeltas = tc.set
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.set, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"-200,-50,0,50", "4 values, want 5"},
		{"-200,-50,0,50,x", "value 4"},
		{"-200,-50,0,50,NaN", "want finite"},
		{"-200,-50,0,50,500", ""},
	} {
		d, err := ParseActionDeltas(tc.in, 500, 10000)
		switch {
		case tc.want == "" && (err != nil || d != [5]float64{-200, -50, 0, 50, 500}):
			t.Errorf("%q: %v, %v", tc.in, d, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

// TestActionUtilization checks the target-utilization action set: a choice
// sizes each task from the allocation and offered load of the observation
// the controller saw (UtilizationTarget, clipped to [MinCPU, MaxCPU]), an
// entry 0 holds, Spaces reports the set in place of the deltas, and a
// snapshot carries the observed loads so a restored env continues bit for
// bit.
func TestActionUtilization(t *testing.T) {
	set := [5]float64{0, 0.9, 0.7, 0.5, 0.3}
	for _, lag := range []int{0, 1, 2} {
		cfg, err := EdgeConfig("pred", 1, diurnal(300))
		if err != nil {
			t.Fatal(err)
		}
		cfg.ActionUtilization = set
		cfg.Physics.MetricLagSteps, cfg.Physics.ActuationDelaySteps = lag, 1
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sp := e.Spaces()
		if !slices.Equal(sp.TargetUtilization, set[:]) || sp.DeltaMillicores != nil || len(sp.Nvec) != e.NumTasks() || sp.Nvec[0] != 5 {
			t.Fatalf("spaces: deltas %v, utilization %v, nvec %v", sp.DeltaMillicores, sp.TargetUtilization, sp.Nvec)
		}
		obs, _, err := e.Reset(3)
		if err != nil {
			t.Fatal(err)
		}
		n := e.NumTasks()
		act := make([]int, n)
		lo, hi := e.cfg.MinCPU, e.cfg.MaxCPU // the defaults applied
		sized := 0                           // choices that sized a task above MinCPU
		// shown[i] is the allocation row of the i-th observation: the
		// allocation in force during the interval it measured.
		var shown [][]float64
		for s := 0; s < 40; s++ {
			cpu := make([]float64, n)
			for k := range n {
				cpu[k] = obs.Task[k*TaskFeatures+TaskCPU] * hi
			}
			shown = append(shown, cpu)
			// The observation reports the metrics measured lag intervals
			// before the newest, at the allocation then in force (the
			// Reset allocation before anything was measured).
			then := shown[max(0, len(shown)-1-lag)]
			rho := make([]float64, n)
			for k := range n {
				rho[k] = math.Expm1(obs.Task[k*TaskFeatures+TaskDemandPerCPU])
				act[k] = (s + k) % 5
			}
			prevReq := slices.Clone(e.info.Requested)
			sr, err := e.Step(Action{Choices: act})
			if err != nil {
				t.Fatal(err)
			}
			for k, c := range act {
				want := prevReq[k] // hold: the allocation last requested
				if s == 0 {
					want = e.cfg.InitialCPU
				}
				if set[c] != 0 {
					if then[k]*rho[k]/set[c] > lo {
						sized++
					}
					want = math.Min(math.Max(math.Ceil(then[k]*rho[k]/set[c]/50-1e-6)*50, lo), hi)
				}
				if got := sr.Info.Requested[k]; math.Abs(got-want) > 1e-9 {
					t.Fatalf("lag %d step %d task %d choice %d (u %v, cpu then %v, rho %v): requested %v, want %v", lag, s, k, c, set[c], then[k], rho[k], got, want)
				}
			}
			obs = sr.Obs
		}
		if sized < 20 {
			t.Fatalf("lag %d: only %d choices sized a task above the minimum: the test does not exercise the sizing", lag, sized)
		}
		// Snapshot mid-episode, continue both, compare.
		snap, err := e.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		f, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.UnmarshalBinary(snap); err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 60; s++ {
			for k := range act {
				act[k] = (3*s + k) % 5
			}
			a, _ := e.Step(Action{Choices: act})
			b, _ := f.Step(Action{Choices: act})
			if a.Reward != b.Reward || !slices.Equal(a.Info.Requested, b.Info.Requested) || !slices.Equal(a.Obs.Task, b.Obs.Task) {
				t.Fatalf("lag %d step %d after restore: diverged", lag, s)
			}
		}
	}
	// The zero set leaves the encoded Config as before the option existed.
	cfg, err := EdgeConfig("pred", 1, diurnal(300))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(cfg); strings.Contains(string(b), "ActionUtilization") {
		t.Error("the zero utilization set is encoded (config hashes would change)")
	}
}

func TestUtilizationTarget(t *testing.T) {
	for _, tc := range []struct{ cpu, rho, u, want float64 }{
		{1000, 0.7, 0.7, 1000}, // exact: no round-up by floating-point noise
		{1000, 0.71, 0.7, 1050},
		{2000, 0.35, 0.7, 1000},
		{500, 3, 0.5, 3000},
		{500, 0, 0.9, 0},
		{1230, 1, 1, 1250},
	} {
		if got := UtilizationTarget(tc.cpu, tc.rho, tc.u); got != tc.want {
			t.Errorf("UtilizationTarget(%v, %v, %v) = %v, want %v", tc.cpu, tc.rho, tc.u, got, tc.want)
		}
	}
}

func TestActionUtilizationRefused(t *testing.T) {
	for _, tc := range []struct {
		util, deltas [5]float64
		want         string
	}{
		{[5]float64{0, 0.9, 0.7, 0.5, 11}, [5]float64{}, "action utilization 4 is 11"},
		{[5]float64{0, 0.9, -0.7, 0.5, 0.3}, [5]float64{}, "action utilization 2 is -0.7"},
		{[5]float64{0, 0.9, math.NaN(), 0.5, 0.3}, [5]float64{}, "action utilization 2 is NaN"},
		{[5]float64{0, 0.5, 0.7, 0.5, 0.3}, [5]float64{}, "repeat 0.5"},
		{[5]float64{0, 0.9, 0.7, 0.5, 0.3}, [5]float64{-200, -50, 0, 50, 500}, "both ActionDeltas and ActionUtilization"},
	} {
		cfg, err := EdgeConfig("pred", 1, rates{1000})
		if err != nil {
			t.Fatal(err)
		}
		cfg.ActionUtilization, cfg.ActionDeltas = tc.util, tc.deltas
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.util, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"0,0.9,0.7,0.5", "4 values, want 5"},
		{"0,0.9,0.7,0.5,x", "value 4"},
		{"0,0,0,0,0", "every choice holds"},
		{"0, 0.9, 0.7, 0.5, 0.3", ""},
	} {
		u, err := ParseActionUtilization(tc.in)
		switch {
		case tc.want == "" && (err != nil || u != [5]float64{0, 0.9, 0.7, 0.5, 0.3}):
			t.Errorf("%q: %v, %v", tc.in, u, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}
