package env

import (
	"math"
	"strings"
	"testing"
)

// TestRewardBranches checks each branch of the reward against values
// computed by hand from the formulas of RewardConfig with the defaults:
// g = 200 ms, two tasks, MinCPU 500 (so n·MinCPU = 1,000 mc), L_s = 160 ms,
// resource span 2·2,000 = 4,000 mc, progress scale 2·500 = 1,000 mc.
func TestRewardBranches(t *testing.T) {
	r := DefaultReward()
	hot := taskPressure{deficit: 0.2, queueS: 0.1, delayS: 0.02}    // pressure max(0.2, 0.5, 0.1) = 0.5
	cold := taskPressure{deficit: 0.05, queueS: 0.01, delayS: 0.01} // 0.05 < 0.1: no pressure
	for _, tc := range []struct {
		name string
		in   rewardInput // slo, n, minCPU, hasPrev filled in below unless set
		want RewardTerms
	}{
		// Compliant.
		{"far from SLO at the minimum", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: 0.5, Resource: 1.5, Total: 2}},
		{"at the safe latency", rewardInput{p95: 0.16, prevP95: 0.1, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: 0.5, Resource: 1.5, Total: 2}},
		// x = (0.18 − 0.16)/0.04 = 0.5, risk −0.5·0.25.
		{"near the SLO", rewardInput{p95: 0.18, prevP95: 0.18, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: 0.5, Risk: -0.125, Resource: 1.5, Total: 1.875}},
		{"at the SLO", rewardInput{p95: 0.2, prevP95: 0.2, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: 0.5, Risk: -0.5, Resource: 1.5, Total: 1.5}},
		// (3,000 − 1,000)/4,000 = 0.5.
		{"resource mid-span", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 3000, prevCPU: 3000},
			RewardTerms{SLO: 0.5, Resource: 0.75, Total: 1.25}},
		{"resource at the span's end", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 5000, prevCPU: 5000},
			RewardTerms{SLO: 0.5, Total: 0.5}},
		{"resource beyond the span", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 9000, prevCPU: 9000},
			RewardTerms{SLO: 0.5, Total: 0.5}},
		// Progress 0.25·500/1,000; resource 1.5·(1 − 500/4,000); churn −0.05·½.
		{"progress down", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 1500, prevCPU: 2000, changed: []float64{-500, 0}},
			RewardTerms{SLO: 0.5, Resource: 1.3125, Progress: 0.125, Churn: -0.025, Total: 1.9125}},
		// Progress 0.25·clip(−1,000/1,000); resource 1.5·(1 − 1,000/4,000).
		{"progress up", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 2000, prevCPU: 1000, changed: []float64{500, 500}},
			RewardTerms{SLO: 0.5, Resource: 1.125, Progress: -0.25, Churn: -0.05, Total: 1.325}},
		{"progress clipped", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 1000, prevCPU: 9000, changed: []float64{-4000, -4000}},
			RewardTerms{SLO: 0.5, Resource: 1.5, Progress: 0.25, Churn: -0.05, Total: 2.2}},
		{"churn compliant", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 1000, prevCPU: 1000, changed: []float64{50, -50}},
			RewardTerms{SLO: 0.5, Resource: 1.5, Churn: -0.05, Total: 1.95}},
		{"no reconf while compliant", rewardInput{p95: 0.1, prevP95: 0.1, totalCPU: 1000, prevCPU: 1000, changed: []float64{50, 0},
			pressure: []taskPressure{cold, cold}},
			RewardTerms{SLO: 0.5, Resource: 1.5, Churn: -0.025, Total: 1.975}},
		{"recovery bonus", rewardInput{p95: 0.18, prevP95: 0.5, prevViolated: true, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: 0.5, Risk: -0.125, Resource: 1.5, Recovery: 0.5, Total: 2.375}},
		{"recovery bonus clips the total", rewardInput{p95: 0.1, prevP95: 0.5, prevViolated: true, totalCPU: 1000, prevCPU: 3000, changed: []float64{-1000, -1000}},
			RewardTerms{SLO: 0.5, Resource: 1.5, Progress: 0.25, Churn: -0.05, Recovery: 0.5, Total: 2.5}},

		// Violating: SLO −(1 + 4·(0.3/0.2 − 1)) = −3; risk, resource and
		// progress 0 whatever the CPU.
		{"entering violation: no onset penalty", rewardInput{p95: 0.3, prevP95: 0.2, violated: true, totalCPU: 1000, prevCPU: 2000},
			RewardTerms{SLO: -3, Recovery: -0.5, Total: -3.5}},
		{"violating, p95 improving", rewardInput{p95: 0.3, prevP95: 0.4, violated: true, prevViolated: true, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: -3, Recovery: 0.5, Total: -2.5}},
		{"violating, p95 improving a lot", rewardInput{p95: 0.3, prevP95: 0.8, violated: true, prevViolated: true, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: -3, Recovery: 1, Total: -2}},
		{"violating, p95 worsening", rewardInput{p95: 0.35, prevP95: 0.3, violated: true, prevViolated: true, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: -4, Recovery: -0.25, Total: -4.25}},
		{"severe violation", rewardInput{p95: 0.6, prevP95: 0.6, violated: true, prevViolated: true, totalCPU: 1000, prevCPU: 1000},
			RewardTerms{SLO: -5, Total: -5}},
		// Reconf 0.5·0.5/2; churn ½·(−0.05·½).
		{"reconf pressured raise", rewardInput{p95: 0.3, prevP95: 0.3, violated: true, prevViolated: true, totalCPU: 1500, prevCPU: 1000,
			changed: []float64{500, 0}, pressure: []taskPressure{hot, cold}},
			RewardTerms{SLO: -3, Churn: -0.0125, Reconf: 0.125, Total: -2.8875}},
		// Reconf 0.5·(−1 − 1)/2.
		{"reconf unpressured raises", rewardInput{p95: 0.3, prevP95: 0.3, violated: true, prevViolated: true, totalCPU: 1100, prevCPU: 1000,
			changed: []float64{50, 50}, pressure: []taskPressure{cold, {}}},
			RewardTerms{SLO: -3, Churn: -0.025, Reconf: -0.5, Total: -3.525}},
		// A raise on a saturated task (delay 0.3/0.2, clipped to 1) and one
		// on an idle task cancel.
		{"reconf mixed", rewardInput{p95: 0.3, prevP95: 0.3, violated: true, prevViolated: true, totalCPU: 2000, prevCPU: 1000,
			changed: []float64{500, 500}, pressure: []taskPressure{{delayS: 0.3}, cold}},
			RewardTerms{SLO: -3, Churn: -0.025, Total: -3.025}},
		{"reconf ignores reductions", rewardInput{p95: 0.3, prevP95: 0.3, violated: true, prevViolated: true, totalCPU: 1000, prevCPU: 1500,
			changed: []float64{-500, 0}, pressure: []taskPressure{cold, cold}},
			RewardTerms{SLO: -3, Churn: -0.0125, Total: -3.0125}},
		{"first interval has no recovery", rewardInput{p95: 0.3, violated: true, totalCPU: 1000, prevCPU: 1000, hasPrev: false},
			RewardTerms{SLO: -3, Total: -3}},
		// −5 − 1 − 0.5 − 0.025 clipped to −6.
		{"clipped below", rewardInput{p95: 2, prevP95: 0.1, violated: true, totalCPU: 1100, prevCPU: 1000,
			changed: []float64{50, 50}, pressure: []taskPressure{cold, cold}},
			RewardTerms{SLO: -5, Recovery: -1, Churn: -0.025, Reconf: -0.5, Total: -6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.slo, in.n, in.minCPU = 0.2, 2, 500
			in.hasPrev = in.prevP95 != 0
			if in.changed == nil {
				in.changed = []float64{0, 0}
			}
			if in.pressure == nil {
				in.pressure = []taskPressure{hot, hot}
			}
			got := r.compute(in)
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"slo", got.SLO, tc.want.SLO}, {"risk", got.Risk, tc.want.Risk}, {"resource", got.Resource, tc.want.Resource},
				{"progress", got.Progress, tc.want.Progress}, {"churn", got.Churn, tc.want.Churn}, {"recovery", got.Recovery, tc.want.Recovery},
				{"reconf", got.Reconf, tc.want.Reconf}, {"total", got.Total, tc.want.Total}} {
				if math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
}

// TestRewardPure checks that compute reads its input and nothing else:
// equal inputs give equal terms, and the input slices are not written.
func TestRewardPure(t *testing.T) {
	r := DefaultReward()
	in := rewardInput{p95: 0.3, prevP95: 0.25, slo: 0.2, hasPrev: true, violated: true, totalCPU: 1500, prevCPU: 1000, n: 2, minCPU: 500,
		changed: []float64{500, 0}, pressure: []taskPressure{{deficit: 0.4}, {}}}
	a := r.compute(in)
	if b := r.compute(in); a != b {
		t.Fatalf("compute not deterministic: %+v vs %+v", a, b)
	}
	if in.changed[0] != 500 || in.pressure[0].deficit != 0.4 {
		t.Fatal("compute wrote its input")
	}
}

// TestRewardValidate checks that every bad coefficient is rejected with an
// error naming its field.
func TestRewardValidate(t *testing.T) {
	for _, tc := range []struct {
		mut  func(r *RewardConfig)
		want string
	}{
		{func(r *RewardConfig) { r.SafeLatency = 1.2 }, "env: reward safe_latency 1.2, want in [0, 1)"},
		{func(r *RewardConfig) { r.SafeLatency = 1 }, "safe_latency"},
		{func(r *RewardConfig) { r.SpanPerTask = 0 }, "span_per_task"},
		{func(r *RewardConfig) { r.ProgressPerTask = math.Inf(1) }, "progress_per_task"},
		{func(r *RewardConfig) { r.RiskWeight = -1 }, "risk_weight"},
		{func(r *RewardConfig) { r.ReconfWeight = math.NaN() }, "reconf_weight"},
		{func(r *RewardConfig) { r.RecoveryBonus = -0.5 }, "recovery_bonus"},
		{func(r *RewardConfig) { r.ViolatingChurn = 2 }, "violating_churn"},
		{func(r *RewardConfig) { r.PressureThreshold = -0.1 }, "pressure_threshold"},
		{func(r *RewardConfig) { r.Low, r.High = 1, 0 }, "reward clip"},
	} {
		r := DefaultReward()
		tc.mut(&r)
		err := r.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
	r := DefaultReward()
	if err := r.validate(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
}

// TestSnapshotKeepsRewardPressure snapshots an Env while it violates, with
// one task backlogged, and checks that a restored Env scores the next
// raise exactly as the original: the pressure R_reconf reads is the last
// interval's, so it must survive the snapshot.
func TestSnapshotKeepsRewardPressure(t *testing.T) {
	w := make(rates, 10)
	for i := range w {
		w[i] = 3000 // above DecisionTreeClassify's 2,500 events/s at 500 mc
	}
	cfg, err := EdgeConfig("pred", 7, w)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Reset(1)
	hold := make([]int, a.NumTasks())
	for k := range hold {
		hold[k] = 2
	}
	for range 3 {
		a.Step(Action{Choices: hold})
	}
	snap, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(cfg)
	if err := b.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	up := make([]int, a.NumTasks())
	for k := range up {
		up[k] = 4
	}
	ra, _ := a.Step(Action{Choices: up})
	rb, _ := b.Step(Action{Choices: up})
	if !ra.Info.Violated || ra.Info.Reward.Reconf == 0 {
		t.Fatalf("want a violating step with a reconf term, got %+v (violated %v)", ra.Info.Reward, ra.Info.Violated)
	}
	if ra.Info.Reward != rb.Info.Reward {
		t.Fatalf("restored env scores %+v, original %+v", rb.Info.Reward, ra.Info.Reward)
	}
}
