package ppo

// Stats is one iteration's log row. Field comments give SB3's metric name.
type Stats struct {
	Iteration          int     // time/iterations
	Timesteps          int     // time/total_timesteps
	FPS                float64 // time/fps: env steps per wall second since Learn started (0 without a clock)
	EpRewMean          float64 // rollout/ep_rew_mean: mean return of the last 100 episodes (NaN before the first)
	EpLenMean          float64 // rollout/ep_len_mean
	ApproxKL           float64 // train/approx_kl: mean of (ρ−1) − log ρ over the last epoch
	ClipFraction       float64 // train/clip_fraction: share of |ρ−1| > ε, mean over minibatches
	EntropyLoss        float64 // train/entropy_loss: −mean entropy, mean over minibatches
	PolicyGradientLoss float64 // train/policy_gradient_loss
	ValueLoss          float64 // train/value_loss
	Loss               float64 // train/loss: total loss of the last minibatch
	ExplainedVariance  float64 // train/explained_variance of the rollout values against the returns
	// ExplainedVarianceMC is the explained variance of the rollout values
	// V(s_t) against the λ = 1 returns of the same rollout,
	//
	//	G_t = r_t + γ·(1 − d_{t+1})·G_{t+1},  G_T = V(s_T) (rollout end),
	//
	// with r_t the training reward (scaled under norm_reward, and with
	// γ·V(final observation) added on truncation, as training bootstraps)
	// and d_{t+1} "s_{t+1} starts a new episode": the discounted return
	// to the episode's end, bootstrapped only at a truncation and at the
	// rollout's last step (weight γ^(T−t), negligible a few 1/(1−γ) steps
	// before it). Unlike train/explained_variance, whose λ-return target
	// shares the critic's own values and so rises as λ falls, this target
	// holds the critic to the realised rewards.
	// train/explained_variance_mc, not an SB3 metric.
	ExplainedVarianceMC float64
	NUpdates            int     // train/n_updates: epochs run so far (SB3 counts epochs)
	LearningRate        float64 // train/learning_rate
	ClipRange           float64 // train/clip_range
	GradientSteps       int     // Adam steps so far (not an SB3 metric; not in Metrics)
	// EntropyFraction is the update's mean entropy as a share of its
	// maximum Σ_d log nvec_d: −EntropyLoss / Σ log nvec (1 = uniform).
	// train/entropy_fraction, not an SB3 metric.
	EntropyFraction float64
	// ChosenActionProb is the mean over the rollout of exp(log π(a|s)/D),
	// the geometric mean of the sampled action's D per-dimension
	// probabilities (1/nvec for a uniform policy). rollout/chosen_action_prob,
	// not an SB3 metric.
	ChosenActionProb float64
}

// Metric is one named value of a log row.
type Metric struct {
	Name  string
	Value float64
}

// MetricNames lists the logged names in the order Metrics returns them.
var MetricNames = []string{
	"rollout/chosen_action_prob", "rollout/ep_len_mean", "rollout/ep_rew_mean",
	"time/fps", "time/iterations", "time/total_timesteps",
	"train/approx_kl", "train/clip_fraction", "train/clip_range", "train/entropy_fraction", "train/entropy_loss",
	"train/explained_variance", "train/explained_variance_mc", "train/learning_rate", "train/loss", "train/n_updates",
	"train/policy_gradient_loss", "train/value_loss",
}

// Metrics returns the row under SB3's names, in MetricNames order.
func (s Stats) Metrics() []Metric {
	v := []float64{
		s.ChosenActionProb, s.EpLenMean, s.EpRewMean,
		s.FPS, float64(s.Iteration), float64(s.Timesteps),
		s.ApproxKL, s.ClipFraction, s.ClipRange, s.EntropyFraction, s.EntropyLoss,
		s.ExplainedVariance, s.ExplainedVarianceMC, s.LearningRate, s.Loss, float64(s.NUpdates),
		s.PolicyGradientLoss, s.ValueLoss,
	}
	m := make([]Metric, len(v))
	for i := range v {
		m[i] = Metric{MetricNames[i], v[i]}
	}
	return m
}

// Logger receives one row per iteration.
type Logger interface {
	Log(s Stats) error
}

// Loggers fans a row out to several loggers in order, stopping at the
// first error.
type Loggers []Logger

// Log implements Logger.
func (ls Loggers) Log(s Stats) error {
	for _, l := range ls {
		if err := l.Log(s); err != nil {
			return err
		}
	}
	return nil
}
