package rng

// The random streams of streamscale, every one derived from the run's root
// seed by Source(seed, name). A name ending in "/" is a prefix completed by
// the consumer (an index, a profile); the completion is documented here.
// Adding a stream means adding a constant here; renaming one changes the
// numbers its consumer draws.
const (
	// EnvPlacement draws the random placement of a scenario's tasks on
	// the servers (env.RandomPlacement; seed: the placement seed).
	EnvPlacement = "env/placement"
	// EnvArrivals, EnvRates, EnvService, EnvJitter and EnvMetrics draw an episode's
	// stochastic physics (env.Physics: arrival counts and times, the
	// sub-second rate modulation, service
	// times, capacity jitter, metric noise; seed: the seed passed to
	// Env.Reset), one stream per option so that turning one on never
	// shifts another.
	EnvArrivals = "env/arrivals"
	EnvRates    = "env/rates"
	EnvService  = "env/service"
	EnvJitter   = "env/jitter"
	EnvMetrics  = "env/metrics"
	// EnvBatches draws the observation's snapshots of the records
	// waiting for their batch (env.HopPoint.Empty; seed: the seed passed
	// to Env.Reset).
	EnvBatches = "env/batches"
	// EnvDomain draws an episode's physics from Config.Randomize (domain
	// randomisation; seed: the seed passed to Env.Reset).
	EnvDomain = "env/domain"
	// EnvVec + "<i>/<episode>" gives the Reset seed of one episode of
	// environment i of a vector (seed: the vector's base seed).
	EnvVec = "env/vec/"
	// CartPoleReset draws CartPole's initial states (seed: Reset's).
	CartPoleReset = "cartpole/reset"
	// CartPoleVec + index gives the Reset seed of one environment of a
	// CartPole vector (seed: the vector's Reset seed).
	CartPoleVec = "cartpole/vec/"
	// TracesSynthetic + trace name draws the synthetic fallback trace.
	TracesSynthetic = "traces/synthetic/"

	// PPOInit draws the initial weights (orthogonal initialisation).
	PPOInit = "ppo/init"
	// PPOShuffle draws the minibatch permutations.
	PPOShuffle = "ppo/shuffle"
	// PPOAction draws sampled actions (training rollouts, a sampling
	// ppo Controller, serve's seeded sampling: seed is the request's).
	PPOAction = "ppo/action"

	// PPOResume + timesteps gives the Reset seed of a vector environment
	// that a resumed run cannot restore from its checkpoint.
	PPOResume = "ppo/resume/"

	// TrainEnv + index gives the Reset seed of one training environment
	// of the vector (seed: the run's root seed).
	TrainEnv = "train/env/"
	// TrainDev + index gives the seed of one development episode used for
	// model selection.
	TrainDev = "train/dev/"
	// TrainEvalCartPole gives the base seed of CartPole's evaluation
	// episodes (episode k resets with Derive(base, TrainEvalCartPole+k)).
	TrainEvalCartPole = "train/eval/cartpole/"

	// AgentsVRebalanceTier + tier index drives that tier's Bayesian
	// optimizer (seed: the episode's).
	AgentsVRebalanceTier = "agents/vrebalance/tier"
	// AgentsVRebalanceCheck drives the throw-away optimizer that
	// validates VRebalance's configuration.
	AgentsVRebalanceCheck = "agents/vrebalance/check"

	// EvalEpisode + "<profile>/<trace>/<placement>" gives the episode
	// seed of one cell of the paired evaluation (seed: the root seed).
	EvalEpisode = "eval/episode/"
	// EvalBootstrap + "<profile>/<trace>/<controller>" drives that cell's
	// bootstrap resampling.
	EvalBootstrap = "eval/bootstrap/"
	// EvalSeedBootstrap + "<profile>/<trace>/<controller>[/<baseline>]"
	// drives the seed-level bootstrap of a controller of several seeds
	// (eval/paired).
	EvalSeedBootstrap = "eval/seed-bootstrap/"

	// ClaspHarnessNoise draws the measurement noise of clasp's test
	// cluster.
	ClaspHarnessNoise = "clasp/harness/noise"

	// ClaspexpModes draws the stage lengths and levels of the CLASP
	// experiment's burst and gradual load modes (seed: the mode seed).
	ClaspexpModes = "claspexp/modes"

	// ServeFixture draws the weights of serve's test policies.
	ServeFixture = "serve/fixture"

	// OpsSource + app name ("wc", "pred", …) draws the input payloads of
	// the runtime's application (serve/runtime/ops; seed: the source's).
	OpsSource = "ops/source/"
	// RuntimeLines draws the words of the lines the runtime's built-in
	// word-count source generates (serve/runtime.WordCount; seed: the
	// source's).
	RuntimeLines = "runtime/lines"
	// RuntimeKeys draws the record keys of the runtime's built-in chain
	// sources (serve/runtime.Chain; seed: the source's).
	RuntimeKeys = "runtime/keys"

	// CalibrateLayouts draws the order in which the live cost probe runs
	// its layouts (eval/live.CostProbe; seed: the probe's).
	CalibrateLayouts = "calibrate/layouts"
)
