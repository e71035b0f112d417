// Package agents holds the controller contracts, the one episode loop and
// the simple baselines. Vertical controllers (PPO policies, VRebalance, the
// baselines below) implement Controller: per-task CPU from the
// observation. Horizontal controllers (CLASP and its baselines, through
// subpackage horizontal) implement HorizontalController: replica plans
// from the step's env.Info. RunEpisode plays one episode of either kind
// (wrapped as an Actor) and is what eval, the CLASP experiments and
// train's development episodes use. The baselines:
//
//   - Static holds every task at a fixed allocation;
//   - Threshold is a per-task utilization-band autoscaler following the
//     Kubernetes HPA algorithm (scale-up at once, stabilized scale-down);
//   - subpackage vrebalance holds the Bayesian-optimization baseline of
//     the EdgeStreamPy paper (VRebalance, Kang et al.), one GP optimizer per
//     workload tier.
//
// Controllers are pure decision logic in the manner of Nomad's scheduler:
// Act maps an observation to an action and keeps, for explanation, the
// per-component scores behind it (Threshold.Decisions; vrebalance's
// Decisions and Tiers); the environment applies the
// action. Subpackage controllertest is the acceptance test every
// Controller passes.
//
// Units: allocations in millicores; latencies in milliseconds; throughput
// in source messages per second; one Act per step, a simulated second.
// Observations are the environment's normalized features (package env,
// obs.go); controllers de-normalize what they need.
//
// Dependencies: agents imports env only; vrebalance adds bo (which imports
// no project package), horizontal adds clasp. TaskRows and FiniteAppFeature are the observation
// checks shared by the controllers.
//
// Concurrency: a Controller is used by one goroutine at a time; run one
// instance per environment. Controllers do not retain the observation
// passed to Act (the environment reuses its buffers); the Action returned
// is valid until the next call to Act or Reset.
//
// Determinism: a controller draws randomness only from the seed passed to
// Reset, through package rng with a stream named
// "agents/<controller>/<purpose>" (listed in rng/names.go) (VRebalance: "agents/vrebalance/tier<i>").
// The same seed and observations give the same actions, bit for bit.
//
// Errors: Act rejects a malformed observation (wrong shape, a non-finite
// feature it reads) with an error prefixed "agents: " and without changing
// state; constructors validate their configuration.
package agents
