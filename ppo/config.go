package ppo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Schedule is a hyperparameter that moves linearly with SB3's
// progress_remaining p (1 before training, 1 − timesteps/total after each
// rollout, so slightly below 0 in the last iteration when the total is not a
// multiple of the rollout size, exactly as in SB3):
//
//	v(p) = End + (Start − End)·p
//
// Start == End is a constant; End == 0 is rl-zoo's "lin_<Start>".
type Schedule struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// Constant returns the schedule that is v throughout.
func Constant(v float64) Schedule { return Schedule{Start: v, End: v} }

// Linear returns the schedule from start (p = 1) to end (p = 0).
func Linear(start, end float64) Schedule { return Schedule{Start: start, End: end} }

// At returns the value at progress remaining p.
func (s Schedule) At(p float64) float64 { return s.End + (s.Start-s.End)*p }

// String writes s as ParseSchedule reads it: "3e-05" for a constant,
// "lin_0.0003" for rl-zoo's linear decay to 0, "0.0003..1e-05" otherwise.
func (s Schedule) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case s.Start == s.End:
		return f(s.Start)
	case s.End == 0:
		return "lin_" + f(s.Start)
	}
	return f(s.Start) + ".." + f(s.End)
}

// ParseSchedule reads a schedule as rl-zoo's hyperparameter files write
// one: a number is a constant, "lin_X" decays linearly from X at the start
// to 0 at the end (Linear(X, 0)); "A..B" moves linearly from A to B. Every
// value must be a finite number ≥ 0 and the start > 0.
func ParseSchedule(s string) (Schedule, error) {
	num := func(t string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("ppo: schedule %q: %q is not a finite number", s, t)
		}
		return v, nil
	}
	var out Schedule
	switch {
	case strings.HasPrefix(s, "lin_"):
		v, err := num(s[len("lin_"):])
		if err != nil {
			return Schedule{}, err
		}
		out = Linear(v, 0)
	case strings.Contains(s, ".."):
		a, b, _ := strings.Cut(s, "..")
		va, err := num(a)
		if err != nil {
			return Schedule{}, err
		}
		vb, err := num(b)
		if err != nil {
			return Schedule{}, err
		}
		out = Linear(va, vb)
	default:
		v, err := num(s)
		if err != nil {
			return Schedule{}, err
		}
		out = Constant(v)
	}
	if out.Start <= 0 || out.End < 0 {
		return Schedule{}, fmt.Errorf("ppo: schedule %q: start must be > 0 and end ≥ 0", s)
	}
	return out, nil
}

// Config holds every PPO hyperparameter (Stable-Baselines3 names in
// brackets). DefaultConfig returns the paper's configuration.
type Config struct {
	TotalTimesteps int      `json:"total_timesteps"`       // env steps to collect, rounded up to whole iterations [total_timesteps] (500,000)
	NumEnvs        int      `json:"n_envs"`                // environments stepped together [n_envs] (14)
	NumSteps       int      `json:"n_steps"`               // steps per environment per rollout [n_steps] (2048)
	BatchSize      int      `json:"batch_size"`            // minibatch size; the last minibatch of an epoch may be smaller [batch_size] (256)
	Epochs         int      `json:"n_epochs"`              // passes over each rollout [n_epochs] (20)
	Gamma          float64  `json:"gamma"`                 // discount factor γ [gamma] (0.995)
	Lambda         float64  `json:"gae_lambda"`            // GAE λ [gae_lambda] (0.95)
	LearningRate   Schedule `json:"learning_rate"`         // Adam step size [learning_rate] (3e-4 constant)
	ClipRange      Schedule `json:"clip_range"`            // policy ratio clip ε [clip_range] (0.2 constant)
	ClipRangeVF    float64  `json:"clip_range_vf"`         // value clip around the rollout value; 0 disables (SB3's None) [clip_range_vf] (0.2)
	EntCoef        float64  `json:"ent_coef"`              // entropy bonus weight [ent_coef] (0.05)
	VFCoef         float64  `json:"vf_coef"`               // value loss weight [vf_coef] (0.5)
	MaxGradNorm    float64  `json:"max_grad_norm"`         // global L2 norm gradients are clipped to [max_grad_norm] (0.5)
	NormalizeAdv   bool     `json:"normalize_advantage"`   // per-minibatch advantage normalisation [normalize_advantage] (true)
	AdamEps        float64  `json:"adam_eps"`              // Adam ε; SB3 overrides PyTorch's 1e-8 [optimizer_kwargs.eps] (1e-5)
	Hidden         []int    `json:"net_arch"`              // hidden layer widths of the actor MLP, and of the critic's unless CriticHidden is set, tanh [net_arch] ([64 64])
	CriticHidden   []int    `json:"critic_arch,omitempty"` // hidden layer widths of the critic MLP; nil: Hidden [net_arch=dict(pi=…, vf=…)] (nil)
	Seed           uint64   `json:"seed"`                  // root seed of every random stream [seed] (284572)
	NormObs        bool     `json:"norm_obs,omitempty"`    // normalise observations by running mean/variance, as VecNormalize [norm_obs] (false: the paper has none)
	NormReward     bool     `json:"norm_reward,omitempty"` // scale rewards by the running std of the γ-discounted return, as VecNormalize [norm_reward] (false)
	ClipObs        float64  `json:"clip_obs,omitempty"`    // bound of a normalised observation, in standard deviations; used with NormObs [clip_obs] (10)
	ClipReward     float64  `json:"clip_reward,omitempty"` // bound of a scaled reward; used with NormReward [clip_reward] (10)
	// FirstLogitBias is the initial bias of every action dimension's
	// first logit (choice 0); the other biases start at 0 as SB3's do. A
	// residual policy (agents/residual) sets it so that "follow the rule"
	// starts most likely: with five choices, b gives it e^b/(e^b + 4)
	// (b = 2: 0.65, b = 3: 0.83). Not an SB3 option (0).
	FirstLogitBias float64 `json:"first_logit_bias,omitempty"`
	// TargetKL, when > 0, stops an update early as SB3's target_kl does:
	// the first minibatch whose approximate KL divergence from the
	// rollout policy, mean((ρ − 1) − log ρ) before its step, exceeds
	// 1.5·TargetKL takes no step, and the update's remaining minibatches
	// and epochs are skipped. 0 is SB3's None [target_kl] (0).
	TargetKL float64 `json:"target_kl,omitempty"`
}

// NormEpsilon is VecNormalize's epsilon, added to a variance under the
// square root; RunningMeanStd starts its count at normCount0.
const (
	NormEpsilon = 1e-8
	normCount0  = 1e-4
)

// MarshalJSON encodes c with SB3's names. ClipObs and ClipReward are left
// out when the normalisation they bound is off, and NormObs and NormReward
// when false, so the hash of a configuration without normalisation (the
// paper's) is what it was before these options existed.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	p := plain(c)
	if !p.NormObs {
		p.ClipObs = 0
	}
	if !p.NormReward {
		p.ClipReward = 0
	}
	return json.Marshal(p)
}

// DefaultConfig returns the configuration used in the paper.
func DefaultConfig() Config {
	return Config{
		TotalTimesteps: 500_000,
		NumEnvs:        14,
		NumSteps:       2048,
		BatchSize:      256,
		Epochs:         20,
		Gamma:          0.995,
		Lambda:         0.95,
		LearningRate:   Constant(3e-4),
		ClipRange:      Constant(0.2),
		ClipRangeVF:    0.2,
		EntCoef:        0.05,
		VFCoef:         0.5,
		MaxGradNorm:    0.5,
		NormalizeAdv:   true,
		AdamEps:        1e-5,
		Hidden:         []int{64, 64},
		Seed:           284572,
		ClipObs:        10,
		ClipReward:     10,
	}
}

// criticHidden is the critic's hidden widths: CriticHidden, or Hidden.
func (c Config) criticHidden() []int {
	if c.CriticHidden != nil {
		return c.CriticHidden
	}
	return c.Hidden
}

// RolloutSize is the number of transitions per iteration: NumSteps·NumEnvs.
func (c Config) RolloutSize() int { return c.NumSteps * c.NumEnvs }

// Iterations is the number of rollout+update iterations: SB3 keeps going
// while fewer than TotalTimesteps transitions were collected, so this is
// ⌈TotalTimesteps / RolloutSize⌉.
func (c Config) Iterations() int { return (c.TotalTimesteps + c.RolloutSize() - 1) / c.RolloutSize() }

// Transitions is the number of env steps the run collects: Iterations·RolloutSize.
func (c Config) Transitions() int { return c.Iterations() * c.RolloutSize() }

// Minibatches is the number of minibatches per epoch: ⌈RolloutSize / BatchSize⌉.
func (c Config) Minibatches() int { return (c.RolloutSize() + c.BatchSize - 1) / c.BatchSize }

// Updates is the number of Adam steps of the run: Iterations·Epochs·Minibatches.
func (c Config) Updates() int { return c.Iterations() * c.Epochs * c.Minibatches() }

// Hash is the hex SHA-256 of the configuration's JSON encoding; artifacts
// and checkpoints record it.
func (c Config) Hash() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // Config has only plain fields
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case c.NumEnvs < 1:
		return fmt.Errorf("ppo: need at least one environment, got %d", c.NumEnvs)
	case c.NumSteps < 1:
		return fmt.Errorf("ppo: n_steps must be positive, got %d", c.NumSteps)
	case c.TotalTimesteps < 1:
		return fmt.Errorf("ppo: total timesteps must be positive, got %d", c.TotalTimesteps)
	case c.BatchSize < 2:
		return fmt.Errorf("ppo: batch size must be at least 2, got %d", c.BatchSize)
	case c.BatchSize > c.RolloutSize():
		return fmt.Errorf("ppo: batch size %d exceeds rollout size %d", c.BatchSize, c.RolloutSize())
	case c.Epochs < 1:
		return fmt.Errorf("ppo: n_epochs must be positive, got %d", c.Epochs)
	case bad(c.Gamma) || c.Gamma < 0 || c.Gamma > 1:
		return fmt.Errorf("ppo: gamma %v outside [0, 1]", c.Gamma)
	case bad(c.Lambda) || c.Lambda < 0 || c.Lambda > 1:
		return fmt.Errorf("ppo: gae lambda %v outside [0, 1]", c.Lambda)
	case bad(c.LearningRate.Start) || bad(c.LearningRate.End) || c.LearningRate.Start <= 0 || c.LearningRate.End < 0:
		return fmt.Errorf("ppo: learning rate must be positive (end non-negative), got %v to %v", c.LearningRate.Start, c.LearningRate.End)
	case bad(c.ClipRange.Start) || bad(c.ClipRange.End) || c.ClipRange.Start <= 0 || c.ClipRange.End < 0:
		return fmt.Errorf("ppo: clip range must be positive (end non-negative), got %v to %v", c.ClipRange.Start, c.ClipRange.End)
	case bad(c.ClipRangeVF) || c.ClipRangeVF < 0:
		return fmt.Errorf("ppo: value clip range must be non-negative (0 disables), got %v", c.ClipRangeVF)
	case bad(c.EntCoef) || c.EntCoef < 0:
		return fmt.Errorf("ppo: entropy coefficient must be non-negative, got %v", c.EntCoef)
	case bad(c.TargetKL) || c.TargetKL < 0:
		return fmt.Errorf("ppo: target KL must be non-negative (0 disables), got %v", c.TargetKL)
	case bad(c.VFCoef) || c.VFCoef < 0:
		return fmt.Errorf("ppo: value coefficient must be non-negative, got %v", c.VFCoef)
	case bad(c.MaxGradNorm) || c.MaxGradNorm <= 0:
		return fmt.Errorf("ppo: max grad norm must be positive, got %v", c.MaxGradNorm)
	case bad(c.AdamEps) || c.AdamEps <= 0:
		return fmt.Errorf("ppo: adam eps must be positive, got %v", c.AdamEps)
	case c.NormObs && (bad(c.ClipObs) || c.ClipObs <= 0):
		return fmt.Errorf("ppo: clip_obs must be positive with norm_obs, got %v", c.ClipObs)
	case bad(c.FirstLogitBias) || math.Abs(c.FirstLogitBias) > 20:
		return fmt.Errorf("ppo: first_logit_bias must be a number in [-20, 20], got %v", c.FirstLogitBias)
	case c.NormReward && (bad(c.ClipReward) || c.ClipReward <= 0):
		return fmt.Errorf("ppo: clip_reward must be positive with norm_reward, got %v", c.ClipReward)
	case len(c.Hidden) == 0:
		return fmt.Errorf("ppo: net_arch needs at least one hidden layer")
	}
	for i, h := range c.Hidden {
		if h < 1 {
			return fmt.Errorf("ppo: hidden layer %d has width %d", i, h)
		}
	}
	if c.CriticHidden != nil && len(c.CriticHidden) == 0 {
		return fmt.Errorf("ppo: critic_arch needs at least one hidden layer (nil: net_arch)")
	}
	for i, h := range c.CriticHidden {
		if h < 1 {
			return fmt.Errorf("ppo: critic hidden layer %d has width %d", i, h)
		}
	}
	if c.Iterations() > math.MaxInt32 {
		return fmt.Errorf("ppo: %d iterations is too many", c.Iterations())
	}
	return nil
}
