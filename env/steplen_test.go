package env

import (
	"math"
	"sort"
	"testing"
)

// stepLenRun runs cfg at step length L for steps steps from seed with the
// fixed allocation tg and returns every step's StepResult.Info copy.
func stepLenRun(t *testing.T, cfg Config, L float64, steps int, seed uint64, tg []float64) []Info {
	t.Helper()
	cfg.Physics.StepSeconds = L
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(seed)
	out := make([]Info, 0, steps)
	for s := 0; s < steps; s++ {
		sr, err := e.Step(Action{Targets: tg})
		if err != nil {
			t.Fatal(err)
		}
		in := sr.Info
		in.Queue = append([]float64(nil), in.Queue...)
		out = append(out, in)
	}
	return out
}

// TestStepSecondsSteadyState: the step's length changes neither the
// per-second rates nor the latency of a steady state. Deterministic
// physics at offered load 0.6 on every task, 20 s of a constant rate as
// 20 steps of 1 s and 80 of 0.25 s: over the last 10 s, throughput, every
// task's measured utilisation and the p95 agree within 1% (the slices of
// a shorter step are shorter, which moves the fluid's pieces by
// microseconds).
func TestStepSecondsSteadyState(t *testing.T) {
	for _, profile := range []string{"pred", "etl"} {
		cfg, err := EdgeConfig(profile, 7, constantRates(2000, 80))
		if err != nil {
			t.Fatal(err)
		}
		tg := loadTargets(t, cfg, 0.6)
		a := stepLenRun(t, cfg, 1, 20, 1, tg)
		b := stepLenRun(t, cfg, 0.25, 80, 1, tg)
		for s := 10; s < 20; s++ {
			x, y := a[s], b[4*s+3]
			if math.Abs(x.Throughput-y.Throughput) > 0.01*x.Throughput {
				t.Errorf("%s second %d: throughput %.1f/s at 1 s steps, %.1f/s at 0.25 s", profile, s, x.Throughput, y.Throughput)
			}
			if math.Abs(x.P95MS-y.P95MS) > 0.01*x.P95MS {
				t.Errorf("%s second %d: p95 %.2f ms at 1 s steps, %.2f ms at 0.25 s", profile, s, x.P95MS, y.P95MS)
			}
		}
		ua, ub := utilAt(t, cfg, 1, 20, tg), utilAt(t, cfg, 0.25, 80, tg)
		for k := range ua {
			if math.Abs(ua[k]-ub[k]) > 0.01*ua[k] {
				t.Errorf("%s task %d: utilisation %.4f at 1 s steps, %.4f at 0.25 s", profile, k, ua[k], ub[k])
			}
		}
	}
}

// utilAt returns every task's measured utilisation after steps steps of
// length L.
func utilAt(t *testing.T, cfg Config, L float64, steps int, tg []float64) []float64 {
	t.Helper()
	cfg.Physics.StepSeconds = L
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(1)
	for s := 0; s < steps; s++ {
		if _, err := e.Step(Action{Targets: tg}); err != nil {
			t.Fatal(err)
		}
	}
	return append([]float64(nil), e.util...)
}

// TestStepSecondsOverload: an overload builds L × the excess rate of
// backlog per step, so after the same number of steps a 0.25 s step holds
// a quarter of a 1 s step's queue, and its latency is lower. PRED, every
// task at offered load 1.25 (deterministic physics): the first task's
// queue after steps 1…4 is within 2% of a quarter of the 1 s run's, and
// every one of those steps' p95 is lower.
func TestStepSecondsOverload(t *testing.T) {
	cfg, err := EdgeConfig("pred", 7, constantRates(2000, 10))
	if err != nil {
		t.Fatal(err)
	}
	for k := range cfg.App.Tasks { // every task's demand above the minimum allocation
		cfg.App.Tasks[k].MIPSPerEvent *= 20
	}
	tg := loadTargets(t, cfg, 1.25)
	a := stepLenRun(t, cfg, 1, 4, 1, tg)
	b := stepLenRun(t, cfg, 0.25, 4, 1, tg)
	src := cfg.App.Sources[0]
	for s := range a {
		qa, qb := a[s].Queue[src], b[s].Queue[src]
		t.Logf("step %d: source queue %.1f at 1 s, %.1f at 0.25 s; p95 %.1f ms, %.1f ms", s, qa, qb, a[s].P95MS, b[s].P95MS)
		if !(qa > 100) || math.Abs(qb-qa/4) > 0.02*qa/4 {
			t.Errorf("step %d: source queue %.1f at 0.25 s steps, want a quarter of %.1f (1 s steps)", s, qb, qa)
		}
		if !(b[s].P95MS < a[s].P95MS) {
			t.Errorf("step %d: p95 %.1f ms at 0.25 s steps, want below the 1 s steps' %.1f ms", s, b[s].P95MS, a[s].P95MS)
		}
	}
}

// TestStepSecondsCoresAgree holds the fast core against the per-event
// reference at 0.25 s steps under the realistic physics (without the
// observation's noise and lag), as TestFluidMatchesPerEventStochastic does
// at 1 s: PRED and ETL at offered loads 0.8 and 0.9, 8 episodes of 35 s
// (after 5 s) per core, the median p95 within 15% + 5 ms and the violation
// rates within 10 points. Measured: medians within 0.7–1.1 ms, violation
// rates within 2.6 points. It fails without tracer.quotaLeft (PRED at 0.9:
// violations 13.8% against 2.1%). (At 1 s steps the reference's median at
// PRED 0.9 is 155 ms: the rate modulation's slices are a tenth of the
// step, Physics.StepSeconds, and 25 ms bursts average out in the queues
// where 100 ms ones do not.)
func TestStepSecondsCoresAgree(t *testing.T) {
	for _, tc := range []struct {
		profile string
		rate    float64
		rho     float64
	}{{"pred", 3000, 0.8}, {"pred", 3000, 0.9}, {"etl", 2500, 0.8}, {"etl", 2500, 0.9}} {
		profile, rho := tc.profile, tc.rho
		c, err := EdgeConfig(profile, 7, constantRates(tc.rate, 160))
		if err != nil {
			t.Fatal(err)
		}
		tg := loadTargets(t, c, rho)
		c.Physics = realisticNoObs()
		var med, viol [2]float64
		for m, mode := range []Mode{Fluid, PerEvent} {
			c.Mode = mode
			var p95 []float64
			n := 0
			for seed := uint64(1); seed <= 8; seed++ {
				for s, in := range stepLenRun(t, c, 0.25, 160, seed+100*uint64(m), tg) {
					if s < 20 {
						continue
					}
					p95 = append(p95, in.P95MS)
					if in.Violated {
						n++
					}
				}
			}
			sort.Float64s(p95)
			med[m], viol[m] = p95[len(p95)/2], float64(n)/float64(len(p95))
		}
		t.Logf("%s ρ %.1f at 0.25 s: median p95 fast %.1f ms, reference %.1f ms; violations %.3f, %.3f", profile, rho, med[0], med[1], viol[0], viol[1])
		if math.Abs(med[0]-med[1]) > 0.15*med[1]+5 || math.Abs(viol[0]-viol[1]) > 0.10 {
			t.Errorf("%s ρ %.1f at 0.25 s steps: fast median p95 %.1f ms, violations %.3f; reference %.1f ms, %.3f", profile, rho, med[0], viol[0], med[1], viol[1])
		}
	}
}
