package ppo

import (
	"math"
	"testing"
)

// TestRunningMeanStdPooled: batch-wise parallel updates equal the pooled
// moments of the whole stream plus RunningMeanStd's prior (weight 1e-4,
// mean 0, variance 1), as SB3's RunningMeanStd computes them.
func TestRunningMeanStdPooled(t *testing.T) {
	batches := [][]float64{{1, 10, 3, -2}, {5, 0}, {-4, 7, 2, 2, 8, 1}} // dim 2
	r := newRunningMeanStd(2)
	var all [][2]float64
	for _, b := range batches {
		r.update(b)
		for i := 0; i < len(b); i += 2 {
			all = append(all, [2]float64{b[i], b[i+1]})
		}
	}
	n := float64(len(all))
	if want := normCount0 + n; r.Count != want {
		t.Fatalf("count %v, want %v", r.Count, want)
	}
	for j := range 2 {
		var sum float64
		for _, x := range all {
			sum += x[j]
		}
		mean := sum / (normCount0 + n)
		ss := normCount0 * (1 + mean*mean)
		for _, x := range all {
			ss += (x[j] - mean) * (x[j] - mean)
		}
		if v := ss / (normCount0 + n); math.Abs(r.Mean[j]-mean) > 1e-12 || math.Abs(r.Var[j]-v) > 1e-12 {
			t.Errorf("dim %d: mean %v var %v, want %v %v", j, r.Mean[j], r.Var[j], mean, v)
		}
	}
}

// TestNormalizerRewards: rewards are divided by √(var+ε) of the running
// discounted return, clipped, and the return restarts where an episode
// ended (VecNormalize.step_wait).
func TestNormalizerRewards(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumEnvs, cfg.NormReward, cfg.ClipReward, cfg.Gamma = 2, true, 1.5, 0.5
	n := newNormalizer(cfg, 1)
	ret := newRunningMeanStd(1)
	r := NewStepResult(2, 1)
	steps := []struct {
		rew  [2]float64
		done [2]bool
	}{{[2]float64{1, 2}, [2]bool{false, true}}, {[2]float64{4, -1}, [2]bool{false, false}}, {[2]float64{0, 30}, [2]bool{true, false}}}
	R := [2]float64{}
	for i, s := range steps {
		copy(r.Rewards, s.rew[:])
		r.Terminated[0], r.Truncated[1] = s.done[0], s.done[1]
		n.step(r)
		for e := range 2 {
			R[e] = R[e]*0.5 + s.rew[e]
		}
		ret.update(R[:])
		sd := math.Sqrt(ret.Var[0] + NormEpsilon)
		for e := range 2 {
			want := math.Max(-1.5, math.Min(1.5, s.rew[e]/sd))
			if r.Rewards[e] != want {
				t.Errorf("step %d env %d: reward %v, want %v", i, e, r.Rewards[e], want)
			}
			if s.done[e] {
				R[e] = 0
			}
		}
	}
	if n.returns[0] != 0 || n.returns[1] != R[1] {
		t.Errorf("returns %v, want [0 %v]", n.returns, R[1])
	}
}

// TestTruncationBootstrapNormalized: with observation and reward
// normalisation the stored reward on truncation is the scaled reward plus
// γ·V of the final observation normalised by the statistics that include
// the step (SB3 normalises info["terminal_observation"] after updating),
// and the buffer holds the observations as the policy saw them.
func TestTruncationBootstrapNormalized(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumEnvs, cfg.NumSteps, cfg.BatchSize, cfg.TotalTimesteps, cfg.Epochs = 1, 4, 4, 4, 1
	cfg.NormObs, cfg.NormReward = true, true
	tr, err := New(cfg, &truncEnv{}, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Replay by hand what the trainer should do.
	ref := newNormalizer(cfg, 2)
	e := &truncEnv{}
	obs := make([]float64, 2)
	e.Reset(0, obs)
	ref.reset(obs)
	if err := tr.env.Reset(cfg.Seed, tr.lastObs); err != nil {
		t.Fatal(err)
	}
	tr.norm.reset(tr.lastObs)
	if err := tr.syncNorm(); err != nil {
		t.Fatal(err)
	}
	tr.lastStarts[0], tr.started = true, true
	theta := append([]float32(nil), tr.theta...)
	if err := tr.collect(); err != nil {
		t.Fatal(err)
	}
	p := tr.Policy()
	r := NewStepResult(1, 2)
	for step := range 4 {
		if err := p.SetNormalization(ref.state()); err != nil {
			t.Fatal(err)
		}
		seen := make([]float32, 2)
		p.NormalizeObs(seen, obs)
		if got := tr.buf.observations[2*step : 2*step+2]; got[0] != seen[0] || got[1] != seen[1] {
			t.Errorf("step %d: stored observation %v, want %v", step, got, seen)
		}
		e.Step([]int{0}, r)
		ref.step(r)
		want := r.Rewards[0]
		if r.Truncated[0] {
			if err := p.SetNormalization(ref.state()); err != nil {
				t.Fatal(err)
			}
			v := make([]float64, 1)
			if err := p.Values(r.FinalObs, v); err != nil {
				t.Fatal(err)
			}
			want += cfg.Gamma * v[0]
		}
		if tr.buf.rewards[step] != want {
			t.Errorf("step %d: reward %v, want %v", step, tr.buf.rewards[step], want)
		}
		copy(obs, r.Obs)
	}
	if !sameBits(theta, tr.theta) {
		t.Fatal("collect changed the weights")
	}
	if tr.norm.obs.Count != normCount0+5 {
		t.Errorf("observation count %v, want 5 + 1e-4", tr.norm.obs.Count)
	}
}

// TestNormalizationChangesTraining: the same seed with normalisation gives
// identical weights twice (serial and two workers) and different weights
// from the run without it.
func TestNormalizationChangesTraining(t *testing.T) {
	cfg := smallConfig(1)
	cfg.NormObs, cfg.NormReward = true, true
	a, _ := train(t, cfg, 1)
	b, _ := train(t, cfg, 2)
	c, _ := train(t, smallConfig(1), 1)
	if !sameBits(a.theta, b.theta) {
		t.Error("same seed with normalisation, different weights")
	}
	if sameBits(a.theta, c.theta) {
		t.Error("normalisation did not change the weights")
	}
}
