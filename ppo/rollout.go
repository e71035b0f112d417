package ppo

import "math"

// rollout is SB3's RolloutBuffer: n_steps × n_envs transitions stored
// step-major ([t][env]). Minibatches index the env-major flattening SB3
// uses (swap_and_flatten): flat index i is env i/nSteps, step i%nSteps.
type rollout struct {
	nSteps, nEnvs, obs, dims int

	observations []float32 // [t][env][obs]
	actions      []int     // [t][env][dim]
	rewards      []float64 // [t][env], bootstrapped on truncation
	starts       []bool    // [t][env]: the observation began an episode
	values       []float64 // [t][env]: V(s_t) at collection
	logps        []float64 // [t][env]: log π_old(a_t|s_t)
	advantages   []float64 // [t][env]
	returns      []float64 // [t][env]: advantages + values
	// mcAdv and mcReturns are the λ = 1 estimates (Monte-Carlo returns
	// bootstrapped only where training bootstraps: truncations and the
	// rollout's end); a diagnostic, never used by the update.
	mcAdv, mcReturns []float64
}

func newRollout(nSteps, nEnvs, obs, dims int) *rollout {
	n := nSteps * nEnvs
	return &rollout{
		nSteps: nSteps, nEnvs: nEnvs, obs: obs, dims: dims,
		observations: make([]float32, n*obs),
		actions:      make([]int, n*dims),
		rewards:      make([]float64, n),
		starts:       make([]bool, n),
		values:       make([]float64, n),
		logps:        make([]float64, n),
		advantages:   make([]float64, n),
		returns:      make([]float64, n),
		mcAdv:        make([]float64, n),
		mcReturns:    make([]float64, n),
	}
}

// row maps a flat (env-major) sample index to its [t][env] row.
func (r *rollout) row(i int) int {
	env, t := i/r.nSteps, i%r.nSteps
	return t*r.nEnvs + env
}

// gae computes generalised advantage estimates (Schulman et al. 2016,
// eq. 16) backwards over the rollout, as SB3's
// compute_returns_and_advantage:
//
//	δ_t = r_t + γ·V(s_{t+1})·(1 − d_{t+1}) − V(s_t)
//	Â_t = δ_t + γλ·(1 − d_{t+1})·Â_{t+1}
//
// where d_{t+1} is "s_{t+1} starts a new episode" (dones after the last
// step) and V(s_{T}) is lastValues. Returns are Â + V.
func gae(rewards, values []float64, starts []bool, lastValues []float64, lastDones []bool, nSteps, nEnvs int, gamma, lambda float64, adv, ret []float64) {
	for e := range nEnvs {
		last := 0.0
		for t := nSteps - 1; t >= 0; t-- {
			var nextNonTerminal, nextValue float64
			if t == nSteps-1 {
				if !lastDones[e] {
					nextNonTerminal = 1
				}
				nextValue = lastValues[e]
			} else {
				if !starts[(t+1)*nEnvs+e] {
					nextNonTerminal = 1
				}
				nextValue = values[(t+1)*nEnvs+e]
			}
			i := t*nEnvs + e
			delta := rewards[i] + gamma*nextValue*nextNonTerminal - values[i]
			last = delta + gamma*lambda*nextNonTerminal*last
			adv[i] = last
		}
	}
	for i := range adv {
		ret[i] = adv[i] + values[i]
	}
}

// explainedVariance is 1 − Var[y − ŷ]/Var[y] (population variances), NaN
// when Var[y] = 0, as SB3's explained_variance.
func explainedVariance(pred, y []float64) float64 {
	vy := variance(y, nil)
	if vy == 0 {
		return math.NaN()
	}
	return 1 - variance(y, pred)/vy
}

// variance is the population variance of y (of y − sub when sub != nil),
// two-pass, in index order.
func variance(y, sub []float64) float64 {
	at := func(i int) float64 {
		if sub != nil {
			return y[i] - sub[i]
		}
		return y[i]
	}
	var mean float64
	for i := range y {
		mean += at(i)
	}
	mean /= float64(len(y))
	var s float64
	for i := range y {
		d := at(i) - mean
		s += d * d
	}
	return s / float64(len(y))
}
