package ppo

import (
	"math"

	"streamscale/ppo/policy"
)

// runningMeanStd is SB3's RunningMeanStd: the mean and population
// variance of a stream of vectors, merged batch by batch with the
// parallel algorithm (Chan et al. 1979), count starting at 1e-4, mean 0,
// variance 1. For a batch of n rows with mean μ_B and variance σ²_B:
//
//	δ = μ_B − μ,  N = count + n
//	μ ← μ + δ·n/N
//	σ² ← (σ²·count + σ²_B·n + δ²·count·n/N) / N
//	count ← N
//
// The batch moments are numpy's: the mean is the sum in row order over n,
// the variance the mean squared deviation from it (two passes).
type runningMeanStd struct {
	Mean, Var []float64
	Count     float64

	bm, bv []float64 // batch moments (scratch)
}

func newRunningMeanStd(dim int) *runningMeanStd {
	r := &runningMeanStd{Mean: make([]float64, dim), Var: make([]float64, dim), Count: normCount0}
	for i := range r.Var {
		r.Var[i] = 1
	}
	r.bm, r.bv = make([]float64, dim), make([]float64, dim)
	return r
}

// update merges the rows of x (len(x)/dim rows, row-major).
func (r *runningMeanStd) update(x []float64) {
	dim := len(r.Mean)
	n := len(x) / dim
	clear(r.bm)
	clear(r.bv)
	for row := range n {
		for j, v := range x[row*dim : (row+1)*dim] {
			r.bm[j] += v
		}
	}
	for j := range r.bm {
		r.bm[j] /= float64(n)
	}
	for row := range n {
		for j, v := range x[row*dim : (row+1)*dim] {
			d := v - r.bm[j]
			r.bv[j] += d * d
		}
	}
	bc := float64(n)
	tot := r.Count + bc
	for j := range r.Mean {
		bv := r.bv[j] / bc
		delta := r.bm[j] - r.Mean[j]
		mA, mB := r.Var[j]*r.Count, bv*bc
		m2 := mA + mB + delta*delta*r.Count*bc/tot
		r.Mean[j] += delta * bc / tot
		r.Var[j] = m2 / tot
	}
	r.Count = tot
}

// normalizer is SB3's VecNormalize around the trainer's VecEnv, in
// training mode: it updates the observation statistics with every batch of
// observations the environments return (after reset and after each step,
// the automatically reset first observations included, final
// observations not), and scales each step's rewards by the standard
// deviation of the running discounted return
//
//	R ← γ·R + r,  ret_rms.update(R),  r̂ = clip(r / √(ret_rms.var + ε), ±clip_reward)
//
// R set to 0 where an episode ended. The observations themselves are
// normalised by the policy (policy.Normalization), which the trainer
// hands the current statistics after every update, so a truncated
// episode's final observation is normalised with the statistics of its
// step, as SB3 normalises info["terminal_observation"].
type normalizer struct {
	cfg     Config
	obs     *runningMeanStd // nil without NormObs
	ret     *runningMeanStd // always kept (SB3 keeps ret_rms even when unused), updated only with NormReward
	returns []float64       // per env discounted return R
}

func newNormalizer(cfg Config, obs int) *normalizer {
	n := &normalizer{cfg: cfg, ret: newRunningMeanStd(1), returns: make([]float64, cfg.NumEnvs)}
	if cfg.NormObs {
		n.obs = newRunningMeanStd(obs)
	}
	return n
}

func (n *normalizer) active() bool { return n.cfg.NormObs || n.cfg.NormReward }

// reset is VecNormalize.reset after the environments were reset into obs.
func (n *normalizer) reset(obs []float64) {
	if n.obs != nil {
		n.obs.update(obs)
	}
	clear(n.returns)
}

// step is VecNormalize.step_wait on r (rewards scaled in place).
func (n *normalizer) step(r *StepResult) {
	if n.obs != nil {
		n.obs.update(r.Obs)
	}
	if n.cfg.NormReward {
		for e, x := range r.Rewards {
			n.returns[e] = n.returns[e]*n.cfg.Gamma + x
		}
		n.ret.update(n.returns)
		s, c := math.Sqrt(n.ret.Var[0]+NormEpsilon), n.cfg.ClipReward
		for e, x := range r.Rewards {
			r.Rewards[e] = min(max(x/s, -c), c)
		}
	}
	for e := range n.returns {
		if r.Terminated[e] || r.Truncated[e] {
			n.returns[e] = 0
		}
	}
}

// state is the policy's record of the current statistics (nil when
// normalisation is off).
func (n *normalizer) state() *policy.Normalization {
	if !n.active() {
		return nil
	}
	s := &policy.Normalization{
		NormObs: n.cfg.NormObs, NormReward: n.cfg.NormReward, Epsilon: NormEpsilon, Gamma: n.cfg.Gamma,
		RetMean: n.ret.Mean[0], RetVar: n.ret.Var[0], RetCount: n.ret.Count,
	}
	if n.cfg.NormObs {
		s.ClipObs, s.ObsCount, s.ObsMean, s.ObsVar = n.cfg.ClipObs, n.obs.Count, n.obs.Mean, n.obs.Var
	}
	if n.cfg.NormReward {
		s.ClipReward = n.cfg.ClipReward
	}
	return s
}
