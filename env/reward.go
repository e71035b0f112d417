package env

import (
	"fmt"
	"math"
)

// RewardConfig holds the coefficients of the seven-term SLO reward
// (EdgeStreamPy, Eq. 5; term ranges from its Table 2). The functional forms
// where the paper gives only ranges are documented on each field; the
// defaults reproduce Table 2's ranges exactly.
type RewardConfig struct {
	// SLOBonus is R_SLO when the interval is compliant (p95 ≤ SLO). Default 0.5.
	SLOBonus float64
	// SLOBase and SLOSlope give R_SLO when violating:
	// −min(SLOMax, SLOBase + SLOSlope·(p95/SLO − 1)). Defaults 1, 4, 5,
	// so R_SLO ∈ [−5, 0.5].
	SLOBase, SLOSlope, SLOMax float64
	// RiskWeight and RiskStart give R_risk when compliant:
	// −RiskWeight·clip((p95/SLO − RiskStart)/(1 − RiskStart), 0, 1): a
	// penalty for running close to the SLO. Defaults 0.5, 0.8 → [−0.5, 0].
	RiskWeight, RiskStart float64
	// ResourceWeight gives R_resource when compliant:
	// ResourceWeight·(1 − (cpu − n·MinCPU)/(n·(MaxCPU − MinCPU))), cpu the
	// total applied allocation. 0 when violating. Default 1.5 → [0, 1.5].
	ResourceWeight float64
	// ProgressWeight gives R_progress when this or the previous interval
	// violated: ProgressWeight·clip((p95_prev − p95)/SLO, −1, 1).
	// Default 0.25 → [−0.25, 0.25].
	ProgressWeight float64
	// ChurnWeight gives R_churn = −ChurnWeight·(tasks whose allocation
	// changed)/n. Default 0.05 → [−0.05, 0].
	ChurnWeight float64
	// RecoveryWeight gives R_recovery: +RecoveryWeight on a violating →
	// compliant transition, −RecoveryWeight on compliant → violating.
	// Default 1 → [−1, 1].
	RecoveryWeight float64
	// ReconfWeight gives R_reconf = ReconfWeight·Σ_k score_k / n over the
	// tasks whose allocation changed: while violating, +1 for raising a
	// pressured task (offered load ≥ PressureUtil of its capacity or a
	// growing queue) and −1 for lowering any task; while compliant, +1 for
	// lowering a task whose offered load is below IdleUtil and −1 for
	// raising a task that is not pressured. Default 0.5 → [−0.5, 0.5].
	ReconfWeight float64
	// PressureUtil and IdleUtil are the utilization thresholds of R_reconf.
	// Defaults 0.9 and 0.7.
	PressureUtil, IdleUtil float64
	// Low and High clip the total. Defaults −6 and 2.5.
	Low, High float64
}

// DefaultReward returns the default reward coefficients.
func DefaultReward() RewardConfig {
	return RewardConfig{
		SLOBonus: 0.5, SLOBase: 1, SLOSlope: 4, SLOMax: 5,
		RiskWeight: 0.5, RiskStart: 0.8,
		ResourceWeight: 1.5, ProgressWeight: 0.25, ChurnWeight: 0.05,
		RecoveryWeight: 1, ReconfWeight: 0.5,
		PressureUtil: 0.9, IdleUtil: 0.7,
		Low: -6, High: 2.5,
	}
}

func (r *RewardConfig) validate() error {
	for _, v := range []float64{r.SLOBonus, r.SLOBase, r.SLOSlope, r.SLOMax, r.RiskWeight, r.ResourceWeight,
		r.ProgressWeight, r.ChurnWeight, r.RecoveryWeight, r.ReconfWeight, r.PressureUtil, r.IdleUtil} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("env: reward coefficients must be finite and ≥ 0")
		}
	}
	if !(r.RiskStart >= 0 && r.RiskStart < 1) {
		return fmt.Errorf("env: reward risk start %v outside [0, 1)", r.RiskStart)
	}
	if !(r.Low < r.High) {
		return fmt.Errorf("env: reward clip [%v, %v] empty", r.Low, r.High)
	}
	return nil
}

// RewardTerms are the seven terms of one step's reward and their clipped sum.
type RewardTerms struct {
	SLO, Risk, Resource, Progress, Churn, Recovery, Reconf float64
	Total                                                  float64
}

// rewardInput is what the reward reads from a step.
type rewardInput struct {
	p95, prevP95, slo      float64 // seconds
	violated, prevViolated bool
	totalCPU               float64
	n                      int
	minCPU, maxCPU         float64
	changed                []float64 // applied − previous allocation per task
	util                   []float64 // offered load / capacity per task
	queueGrew              []bool
}

func (r *RewardConfig) compute(in rewardInput) RewardTerms {
	var t RewardTerms
	x := 0.0
	if in.slo > 0 {
		x = in.p95 / in.slo
	}
	n := float64(in.n)
	if !in.violated {
		t.SLO = r.SLOBonus
		if r.RiskStart < 1 {
			t.Risk = -r.RiskWeight * clip((x-r.RiskStart)/(1-r.RiskStart), 0, 1)
		}
		span := n * (in.maxCPU - in.minCPU)
		frac := 0.0
		if span > 0 {
			frac = clip((in.totalCPU-n*in.minCPU)/span, 0, 1)
		}
		t.Resource = r.ResourceWeight * (1 - frac)
	} else {
		t.SLO = -min(r.SLOMax, r.SLOBase+r.SLOSlope*max(x-1, 0))
	}
	if in.violated || in.prevViolated {
		t.Progress = r.ProgressWeight * clip((in.prevP95-in.p95)/in.slo, -1, 1)
	}
	switch {
	case in.prevViolated && !in.violated:
		t.Recovery = r.RecoveryWeight
	case !in.prevViolated && in.violated:
		t.Recovery = -r.RecoveryWeight
	}
	changes, score := 0, 0.0
	for k, d := range in.changed {
		if d == 0 {
			continue
		}
		changes++
		pressured := in.util[k] >= r.PressureUtil || in.queueGrew[k]
		if in.violated {
			if d > 0 && pressured {
				score++
			} else if d < 0 {
				score--
			}
		} else {
			if d < 0 && in.util[k] < r.IdleUtil {
				score++
			} else if d > 0 && !pressured {
				score--
			}
		}
	}
	if in.n > 0 {
		t.Churn = -r.ChurnWeight * (float64(changes) / n)
		t.Reconf = r.ReconfWeight * (score / n)
	}
	t.Total = clip(t.SLO+t.Risk+t.Resource+t.Progress+t.Churn+t.Recovery+t.Reconf, r.Low, r.High)
	return t
}

func clip(x, lo, hi float64) float64 {
	if x != x {
		return lo
	}
	return min(max(x, lo), hi)
}
