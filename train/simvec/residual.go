package simvec

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/ppo"
)

// Lagrangian is the constrained objective of a residual run: minimise the
// CPU allocated subject to a budget on the share of violating steps,
// as a Lagrangian relaxation with a learned multiplier (Altman,
// "Constrained Markov Decision Processes", 1999; the PPO-Lagrangian of
// Ray, Achiam and Amodei, "Benchmarking Safe Exploration in Deep RL",
// 2019). The step reward is
//
//	r = −TotalCPU / (n·MaxCPU) − λ·violated
//
// (a CPU cost free of the app's scale: the share of the n tasks' largest
// allocation in use), and after every Window steps of all environments λ
// takes a projected dual-ascent step on the window's violation rate v̂:
//
//	λ ← max(0, λ + LR·(v̂ − Budget)).
//
// The episode returns reported (ppo.Episode) stay the environment's
// seven-term reward, for comparison with other runs.
type Lagrangian struct {
	Budget float64 // allowed share of violating steps, in [0, 1)
	Init   float64 // λ at the start, ≥ 0
	LR     float64 // dual step size, ≥ 0 (0: a fixed λ = Init)
	Window int     // steps per dual update, ≥ 1 (the rollout length)
}

// ParseLagrangian reads "lagrangian[:budget=B][:lambda=L][:lr=E]"
// (defaults: budget 0.01, λ 1, LR 20); Window is set by the caller.
func ParseLagrangian(s string) (Lagrangian, error) {
	l := Lagrangian{Budget: 0.01, Init: 1, LR: 20}
	name, rest, _ := strings.Cut(s, ":")
	if name != "lagrangian" {
		return l, fmt.Errorf("simvec: objective %q, want lagrangian[:budget=B][:lambda=L][:lr=E]", s)
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ":") {
		if kv == "" && rest == "" {
			break
		}
		k, v, ok := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || math.IsNaN(x) || math.IsInf(x, 0) || seen[k] {
			return l, fmt.Errorf("simvec: objective %q: %q is not KEY=NUMBER with a key given once", s, kv)
		}
		seen[k] = true
		switch k {
		case "budget":
			l.Budget = x
		case "lambda":
			l.Init = x
		case "lr":
			l.LR = x
		default:
			return l, fmt.Errorf("simvec: objective %q: unknown key %q (budget, lambda, lr)", s, k)
		}
	}
	if !(l.Budget >= 0 && l.Budget < 1) || l.Init < 0 || l.LR < 0 || l.Init > 1e6 || l.LR > 1e6 {
		return l, fmt.Errorf("simvec: objective %q: want budget in [0, 1), lambda and lr in [0, 1e6]", s)
	}
	return l, nil
}

// String is the spec ParseLagrangian reads.
func (l Lagrangian) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return "lagrangian:budget=" + f(l.Budget) + ":lambda=" + f(l.Init) + ":lr=" + f(l.LR)
}

// Residual is a ppo.StatefulVecEnv of residual choices over a base rule
// (agents/residual): each environment of a Vec gets an Adapter; the
// policy's observation is the flattened Dict observation followed by the
// Adapter's features, its five choices per task are corrections of the
// rule's targets, and the environment steps on the corrected targets.
// With a Lagrangian objective the rewards are replaced as Lagrangian
// says. Determinism as Vec's: the rules have no randomness and the dual
// update depends on the rollouts only.
type Residual struct {
	v        *Vec
	adapters []*residual.Adapter
	obsSize  int
	feat     int
	maxCPU   []float64 // each environment's MaxCPU, the CPU cost's scale
	obj      *Lagrangian
	lambda   float64
	viol     float64 // violating steps since the last dual update
	steps    int     // steps (of all envs) since the last dual update
}

var _ ppo.StatefulVecEnv = (*Residual)(nil)

// NewResidual wraps v with residual choices over base, with the
// temporal context ctx (agents/residual.Context); obj, if not nil,
// is the constrained objective.
func NewResidual(v *Vec, base rulespec.Rule, ctx residual.Context, obj *Lagrangian) (*Residual, error) {
	r := &Residual{v: v, feat: ctx.PerTask() * v.nTasks}
	for i, e := range v.envs {
		cfg := e.Env(0).Config()
		a, err := residual.NewContext(base, cfg, ctx)
		if err != nil {
			return nil, fmt.Errorf("simvec: env %d: %w", i, err)
		}
		r.adapters = append(r.adapters, a)
		_, hi := rulespec.ScenarioBounds(cfg)
		r.maxCPU = append(r.maxCPU, hi)
	}
	for _, k := range v.nvec {
		if k != len(residual.Choices) {
			return nil, fmt.Errorf("simvec: residual choices need %d-way action dimensions, the environment has %v", len(residual.Choices), v.nvec)
		}
	}
	if obj != nil {
		if obj.Window < 1 {
			return nil, fmt.Errorf("simvec: Lagrangian window %d < 1", obj.Window)
		}
		o := *obj
		r.obj, r.lambda = &o, o.Init
	}
	r.obsSize = v.obsSize + r.feat
	return r, nil
}

// NumEnvs implements ppo.VecEnv.
func (r *Residual) NumEnvs() int { return r.v.NumEnvs() }

// ObsSize implements ppo.VecEnv: the Dict observation and the features.
func (r *Residual) ObsSize() int { return r.obsSize }

// Nvec implements ppo.VecEnv.
func (r *Residual) Nvec() []int { return r.v.nvec }

// Features is the number of observation values appended per environment.
func (r *Residual) Features() int { return r.feat }

// Lambda is the multiplier in force (Lagrangian.Init without objective).
func (r *Residual) Lambda() float64 { return r.lambda }

// observe runs env i's rule on o and writes the policy's observation.
func (r *Residual) observe(i int, o env.Observation, dst []float64) error {
	if err := r.adapters[i].Observe(o); err != nil {
		return fmt.Errorf("simvec: env %d: %w", i, err)
	}
	r.v.flatten(dst[:r.v.obsSize], o)
	r.adapters[i].AppendFeatures(dst[r.v.obsSize:r.v.obsSize])
	return nil
}

// Reset implements ppo.VecEnv (as Vec.Reset).
func (r *Residual) Reset(root uint64, obs []float64) error {
	if len(obs) != r.NumEnvs()*r.obsSize {
		return fmt.Errorf("simvec: observation buffer has %d entries, want %d", len(obs), r.NumEnvs()*r.obsSize)
	}
	for i, v := range r.v.envs {
		o, err := v.Reset(EnvSeed(root, i))
		if err != nil {
			return err
		}
		if err := r.adapters[i].Reset(0); err != nil {
			return err
		}
		if err := r.observe(i, o[0], obs[i*r.obsSize:(i+1)*r.obsSize]); err != nil {
			return err
		}
	}
	return nil
}

// Step implements ppo.VecEnv.
func (r *Residual) Step(actions []int, res *ppo.StepResult) error {
	s := r.v
	n, d := s.NumEnvs(), s.nTasks
	if len(actions) != n*d {
		return fmt.Errorf("simvec: %d action entries, want %d", len(actions), n*d)
	}
	for i := range s.envs {
		a, err := r.adapters[i].Action(actions[i*d : (i+1)*d])
		if err != nil {
			return fmt.Errorf("simvec: env %d: %w", i, err)
		}
		s.actions[i][0] = env.Action{Targets: a.Targets}
	}
	if err := s.stepAll(); err != nil {
		return err
	}
	res.Episodes = res.Episodes[:0]
	for i, out := range s.results {
		info := out.Infos[0]
		res.Rewards[i] = out.Rewards[0]
		if r.obj != nil {
			res.Rewards[i] = -info.TotalCPU / (float64(d) * r.maxCPU[i])
			if info.Violated {
				res.Rewards[i] -= r.lambda
			}
		}
		if info.Violated {
			r.viol++
		}
		res.Terminated[i] = out.Terminated[0]
		res.Truncated[i] = out.Truncated[0]
		if out.Terminated[0] || out.Truncated[0] {
			if err := r.observe(i, out.FinalObs[0], res.FinalObs[i*r.obsSize:(i+1)*r.obsSize]); err != nil {
				return err
			}
			if err := r.adapters[i].Reset(0); err != nil {
				return err
			}
			res.Episodes = append(res.Episodes, ppo.Episode{Env: i, Return: out.EpisodeReturn[0], Length: out.EpisodeLength[0]})
		}
		if err := r.observe(i, out.Obs[0], res.Obs[i*r.obsSize:(i+1)*r.obsSize]); err != nil {
			return err
		}
	}
	r.steps++
	if r.obj != nil && r.steps >= r.obj.Window {
		rate := r.viol / float64(r.steps*n)
		r.lambda = max(0, r.lambda+r.obj.LR*(rate-r.obj.Budget))
		r.viol, r.steps = 0, 0
	}
	return nil
}

// MarshalBinary implements ppo.StatefulVecEnv: the Vec's state, the
// multiplier and its window's counts, and each Adapter's state.
func (r *Residual) MarshalBinary() ([]byte, error) {
	inner, err := r.v.MarshalBinary()
	if err != nil {
		return nil, err
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(inner)))
	out = append(out, inner...)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(r.lambda))
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(r.viol))
	out = binary.LittleEndian.AppendUint64(out, uint64(r.steps))
	for _, a := range r.adapters {
		b, err := a.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out = binary.LittleEndian.AppendUint64(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

// UnmarshalBinary implements ppo.StatefulVecEnv.
func (r *Residual) UnmarshalBinary(b []byte) error {
	next := func() ([]byte, error) {
		if len(b) < 8 || binary.LittleEndian.Uint64(b) > uint64(len(b)-8) {
			return nil, fmt.Errorf("simvec: residual state truncated")
		}
		k := int(binary.LittleEndian.Uint64(b))
		p := b[8 : 8+k]
		b = b[8+k:]
		return p, nil
	}
	inner, err := next()
	if err != nil {
		return err
	}
	if len(b) < 24 {
		return fmt.Errorf("simvec: residual state truncated")
	}
	lambda := math.Float64frombits(binary.LittleEndian.Uint64(b))
	viol := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	steps := int(binary.LittleEndian.Uint64(b[16:]))
	b = b[24:]
	parts := make([][]byte, len(r.adapters))
	for i := range parts {
		if parts[i], err = next(); err != nil {
			return err
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("simvec: %d trailing bytes after the residual state", len(b))
	}
	if err := r.v.UnmarshalBinary(inner); err != nil {
		return err
	}
	for i, p := range parts {
		if err := r.adapters[i].UnmarshalBinary(p); err != nil {
			return fmt.Errorf("simvec: env %d: %w", i, err)
		}
	}
	r.lambda, r.viol, r.steps = lambda, viol, steps
	return nil
}
