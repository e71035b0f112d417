package env

import (
	"fmt"
	"math"
)

// RewardConfig holds the coefficients of the seven-term SLO reward as
// EdgeStreamPy writes it (EdgeStreamPy, Eq. 5 and Table 2). With L the
// interval's p95 latency, g the SLO, L_prev the previous interval's p95,
// C the total applied CPU, C_prev the previous interval's, n the number of
// tasks and m = MinCPU the task minimum (so n·m is the minimum feasible
// allocation), the reward of an interval is
//
//	R = clip(R_SLO + R_risk + R_resource + R_progress + R_churn + R_recovery + R_reconf, Low, High)
//
// and its terms are, when the interval is compliant (L ≤ g):
//
//	R_SLO      = SLOBonus                                                      [+0.5]
//	R_risk     = −RiskWeight·clip((L − L_s)/(g − L_s), 0, 1)²,  L_s = SafeLatency·g   [−0.5, 0]
//	R_resource = ResourceWeight·(1 − clip((C − n·m)/(n·SpanPerTask), 0, 1))   [0, 1.5]
//	R_progress = ProgressWeight·clip((C_prev − C)/(n·ProgressPerTask), −1, 1) [−0.25, 0.25]
//	R_churn    = −ChurnWeight·changed/n                                        [−0.05, 0]
//	R_recovery = RecoveryBonus if the previous interval violated, else 0       [0, 0.5]
//	R_reconf   = 0
//
// and when it violates (L > g):
//
//	R_SLO      = −min(SLOMax, SLOBase + SLOSlope·(L/g − 1))                   [−5, −1]
//	R_risk     = R_resource = R_progress = 0
//	R_churn    = −ChurnWeight·ViolatingChurn·changed/n                         [−0.025, 0]
//	R_recovery = RecoveryWeight·clip((L_prev − L)/g, −1, 1)                   [−1, 1]
//	R_reconf   = ReconfWeight·clip(Σ_{k raised} s_k / n, −1, 1)                [−0.5, 0.5]
//
// where changed is the number of tasks whose allocation changed, and for a
// task k whose allocation was raised s_k = p_k if p_k ≥ PressureThreshold
// and −1 otherwise. p_k is the pressure task k showed in the interval
// before the raise (what the controller observed when it acted): the
// largest of its throughput deficit clip(1 − processed/received, 0, 1),
// its queue pressure clip(seconds of queued work/g, 0, 1) and its
// processing latency clip(mean delay at the task/g, 0, 1). R_recovery stays
// in [−1, 1]: its two parts never fall in the same interval.
//
// The paper gives the forms of R_SLO, R_risk, R_resource, R_progress,
// R_recovery and R_reconf in words; the scales that turn them into numbers
// (SpanPerTask, ProgressPerTask, the pressure measures, PressureThreshold,
// ViolatingChurn) are ours and documented on each field. There is no
// penalty for entering violation: R_SLO already charges the violating
// interval, and R_recovery charges the rise in p95 that caused it. In
// shared-CPU scenarios the scheduler, not the controller, splits the CPU:
// no task's allocation "changes", so R_progress, R_churn and R_reconf are 0.
type RewardConfig struct {
	// SLOBonus is R_SLO when the interval is compliant. Default 0.5.
	SLOBonus float64
	// SLOBase, SLOSlope and SLOMax give R_SLO when violating,
	// −min(SLOMax, SLOBase + SLOSlope·(L/g − 1)), a function of the
	// relative severity L/g − 1. Defaults 1, 4 and 5, so R_SLO ∈ [−5, −1].
	SLOBase, SLOSlope, SLOMax float64

	// RiskWeight is the largest risk penalty, reached at L = g. Default 0.5.
	RiskWeight float64
	// SafeLatency is the safe-latency threshold L_s as a fraction of the
	// SLO, in [0, 1): below it R_risk is 0, above it the penalty grows
	// quadratically to −RiskWeight at the SLO. Default 0.8.
	SafeLatency float64

	// ResourceWeight is R_resource at the minimum feasible allocation
	// n·MinCPU. Default 1.5.
	ResourceWeight float64
	// SpanPerTask is the span, millicores per task, over which R_resource
	// falls linearly from ResourceWeight to 0: C ≥ n·(MinCPU + SpanPerTask)
	// earns nothing. Default 2,000 mc, where allocations of competent
	// controllers lie: a threshold autoscaler on PRED uses about 600–1,000
	// mc per task (R_resource 1.13–1.43), over-provisioning policies 3,000+
	// (0). The full range n·(MaxCPU − MinCPU) would leave a nearly flat term.
	SpanPerTask float64

	// ProgressWeight is the largest R_progress. Default 0.25.
	ProgressWeight float64
	// ProgressPerTask is the reduction of C, millicores per task, that earns
	// the full +ProgressWeight (an equal increase the full penalty).
	// Default 500 mc, the largest single action step (DeltaMillicores).
	ProgressPerTask float64

	// ChurnWeight is the largest churn penalty, when every task's
	// allocation changed. Default 0.05.
	ChurnWeight float64
	// ViolatingChurn scales R_churn while violating, in [0, 1], so that a
	// controller may move fast to recover. Default 0.5 (half the penalty).
	ViolatingChurn float64

	// RecoveryWeight scales the p95 reduction rewarded while violating,
	// RecoveryWeight·clip((L_prev − L)/g, −1, 1). Default 1 → [−1, 1].
	RecoveryWeight float64
	// RecoveryBonus is R_recovery in the compliant interval that follows a
	// violating one (capped at 1). Default 0.5, less than the SLO penalty
	// of the violating interval (at least SLOBase) so that leaving and
	// regaining compliance does not pay.
	RecoveryBonus float64

	// ReconfWeight is the largest |R_reconf|. Default 0.5.
	ReconfWeight float64
	// PressureThreshold is the pressure, in [0, 1], below which a task
	// counts as showing no pressure, so that raising it while violating is
	// penalised. Default 0.1.
	PressureThreshold float64

	// Low and High clip the total. Defaults −6 and 2.5.
	Low, High float64
}

// DefaultReward returns the default reward coefficients.
func DefaultReward() RewardConfig {
	return RewardConfig{
		SLOBonus: 0.5, SLOBase: 1, SLOSlope: 4, SLOMax: 5,
		RiskWeight: 0.5, SafeLatency: 0.8,
		ResourceWeight: 1.5, SpanPerTask: 2000,
		ProgressWeight: 0.25, ProgressPerTask: 500,
		ChurnWeight: 0.05, ViolatingChurn: 0.5,
		RecoveryWeight: 1, RecoveryBonus: 0.5,
		ReconfWeight: 0.5, PressureThreshold: 0.1,
		Low: -6, High: 2.5,
	}
}

func (r *RewardConfig) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"slo_bonus", r.SLOBonus}, {"slo_base", r.SLOBase}, {"slo_slope", r.SLOSlope}, {"slo_max", r.SLOMax},
		{"risk_weight", r.RiskWeight}, {"resource_weight", r.ResourceWeight}, {"progress_weight", r.ProgressWeight},
		{"churn_weight", r.ChurnWeight}, {"recovery_weight", r.RecoveryWeight}, {"recovery_bonus", r.RecoveryBonus},
		{"reconf_weight", r.ReconfWeight},
	} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("env: reward %s %v, want finite and ≥ 0", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"span_per_task", r.SpanPerTask}, {"progress_per_task", r.ProgressPerTask}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("env: reward %s %v, want finite and > 0", f.name, f.v)
		}
	}
	if !(r.SafeLatency >= 0 && r.SafeLatency < 1) {
		return fmt.Errorf("env: reward safe_latency %v, want in [0, 1)", r.SafeLatency)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"violating_churn", r.ViolatingChurn}, {"pressure_threshold", r.PressureThreshold}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("env: reward %s %v, want in [0, 1]", f.name, f.v)
		}
	}
	if !(r.Low < r.High) || math.IsInf(r.Low, 0) || math.IsInf(r.High, 0) {
		return fmt.Errorf("env: reward clip [%v, %v], want finite low < high", r.Low, r.High)
	}
	return nil
}

// RewardTerms are the seven terms of one step's reward and their clipped sum.
type RewardTerms struct {
	SLO, Risk, Resource, Progress, Churn, Recovery, Reconf float64
	Total                                                  float64
}

// taskPressure is what one task showed during an interval, the
// components of its R_reconf pressure.
type taskPressure struct {
	deficit float64 // 1 − processed/received (0 when it received nothing)
	queueS  float64 // seconds of queued work at the interval's end
	delayS  float64 // mean delay of the events it processed, seconds
}

// rewardInput is what the reward reads from a step.
type rewardInput struct {
	p95, prevP95, slo float64 // seconds
	hasPrev           bool    // a previous interval exists (prevP95 is a measurement)
	violated          bool
	prevViolated      bool
	totalCPU, prevCPU float64 // applied allocation this and the previous interval, millicores
	n                 int
	minCPU            float64   // task minimum, millicores
	changed           []float64 // applied − previous allocation per task
	pressure          []taskPressure
}

// compute evaluates the reward of one interval; it reads nothing but in.
func (r *RewardConfig) compute(in rewardInput) RewardTerms {
	var t RewardTerms
	if in.n <= 0 || !(in.slo > 0) {
		return t
	}
	n, g := float64(in.n), in.slo
	changes := 0
	for _, d := range in.changed {
		if d != 0 {
			changes++
		}
	}
	churn := -r.ChurnWeight * (float64(changes) / n)
	if !in.violated {
		t.SLO = r.SLOBonus
		ls := r.SafeLatency * g
		x := clip((in.p95-ls)/(g-ls), 0, 1)
		t.Risk = -r.RiskWeight * x * x
		t.Resource = r.ResourceWeight * (1 - clip((in.totalCPU-n*in.minCPU)/(n*r.SpanPerTask), 0, 1))
		t.Progress = r.ProgressWeight * clip((in.prevCPU-in.totalCPU)/(n*r.ProgressPerTask), -1, 1)
		t.Churn = churn
		if in.hasPrev && in.prevViolated {
			t.Recovery = min(r.RecoveryBonus, 1)
		}
	} else {
		t.SLO = -min(r.SLOMax, r.SLOBase+r.SLOSlope*(in.p95/g-1))
		t.Churn = r.ViolatingChurn * churn
		if in.hasPrev {
			t.Recovery = clip(r.RecoveryWeight*clip((in.prevP95-in.p95)/g, -1, 1), -1, 1)
		}
		score := 0.0
		for k, d := range in.changed {
			if d <= 0 {
				continue
			}
			if p := in.pressure[k].of(g); p >= r.PressureThreshold {
				score += p
			} else {
				score--
			}
		}
		t.Reconf = r.ReconfWeight * clip(score/n, -1, 1)
	}
	t.Total = clip(t.SLO+t.Risk+t.Resource+t.Progress+t.Churn+t.Recovery+t.Reconf, r.Low, r.High)
	return t
}

// of is the task's pressure in [0, 1] against the SLO g (seconds): the
// largest of its throughput deficit, queue pressure and processing latency.
func (p taskPressure) of(g float64) float64 {
	return max(clip(p.deficit, 0, 1), clip(p.queueS/g, 0, 1), clip(p.delayS/g, 0, 1))
}

func clip(x, lo, hi float64) float64 {
	if x != x {
		return lo
	}
	return min(max(x, lo), hi)
}
