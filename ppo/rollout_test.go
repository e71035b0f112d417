package ppo

import (
	"math"
	"testing"
)

// TestGAEByHand works a 3-step, 2-env rollout by hand. Env 0 runs
// through; env 1's episode ends after step 0 (step 1 starts a new one) and
// it is done after the last step.
func TestGAEByHand(t *testing.T) {
	const g, l = 0.9, 0.5
	// [t][env]
	rewards := []float64{1, 2, 0, 1, 3, 5}
	values := []float64{0.5, 1, 0.2, 0.4, 0.1, 0.3}
	starts := []bool{true, true, false, true, false, false}
	last := []float64{0.7, 9}
	dones := []bool{false, true}
	adv, ret := make([]float64, 6), make([]float64, 6)
	gae(rewards, values, starts, last, dones, 3, 2, g, l, adv, ret)

	// env 0: δ2 = 3 + .9·.7 − .1 = 3.53; δ1 = 0 + .9·.1 − .2 = −.11; δ0 = 1 + .9·.2 − .5 = .68
	a2 := 3.53
	a1 := -0.11 + g*l*a2
	a0 := 0.68 + g*l*a1
	// env 1: done after t2 → δ2 = 5 − .3 = 4.7; t1 → t2 continues: δ1 = 1 + .9·.3 − .4 = .87;
	// t0 → t1 starts a new episode: δ0 = 2 − 1 = 1, no carry.
	b2 := 4.7
	b1 := 0.87 + g*l*b2
	b0 := 1.0
	want := []float64{a0, b0, a1, b1, a2, b2}
	for i := range want {
		if math.Abs(adv[i]-want[i]) > 1e-12 || math.Abs(ret[i]-(want[i]+values[i])) > 1e-12 {
			t.Errorf("row %d: adv %v ret %v, want %v %v", i, adv[i], ret[i], want[i], want[i]+values[i])
		}
	}
}

func TestExplainedVariance(t *testing.T) {
	y := []float64{1, 2, 3, 4}
	if ev := explainedVariance(y, y); ev != 1 {
		t.Errorf("perfect prediction: %v", ev)
	}
	// Var[y] = 1.25 and Var[y − 0] = 1.25, so 1 − 1.25/1.25 = 0.
	if ev := explainedVariance([]float64{0, 0, 0, 0}, y); math.Abs(ev) > 1e-15 {
		t.Errorf("zero prediction: %v, want 0", ev)
	}
	if !math.IsNaN(explainedVariance(y, []float64{5, 5, 5, 5})) {
		t.Error("constant target must give NaN")
	}
}

// TestGAELambdaOneIsMonteCarlo: at λ = 1 the GAE returns are the
// discounted reward sums to the episode's end, bootstrapped from the last
// value only at the rollout's end (the target of explained_variance_mc),
// checked against a forward sum per step.
func TestGAELambdaOneIsMonteCarlo(t *testing.T) {
	const nSteps, nEnvs, gamma = 6, 2, 0.9
	rewards := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	values := []float64{0.5, -1, 2, 0.25, 1, 3, -2, 0.5, 4, 1, 0, 2}
	starts := make([]bool, nSteps*nEnvs)
	starts[3*nEnvs+0] = true // env 0: a new episode at t = 3
	starts[5*nEnvs+1] = true // env 1: a new episode at t = 5
	last := []float64{10, -3}
	lastDones := []bool{false, true}
	adv, ret := make([]float64, len(rewards)), make([]float64, len(rewards))
	gae(rewards, values, starts, last, lastDones, nSteps, nEnvs, gamma, 1, adv, ret)
	for e := range nEnvs {
		for t0 := range nSteps {
			g, disc := 0.0, 1.0
			t1 := t0
			for ; t1 < nSteps; t1++ {
				if t1 > t0 && starts[t1*nEnvs+e] {
					break
				}
				g += disc * rewards[t1*nEnvs+e]
				disc *= gamma
			}
			if t1 == nSteps && !lastDones[e] {
				g += disc * last[e]
			}
			if got := ret[t0*nEnvs+e]; math.Abs(got-g) > 1e-12 {
				t.Errorf("env %d t %d: λ=1 return %v, Monte-Carlo sum %v", e, t0, got, g)
			}
		}
	}
}
