// Package agents holds the Controller contract that every autoscaling
// controller implements (PPO policies, VRebalance, CLASP, the simple
// baselines) and the baselines themselves:
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
// no project package). TaskRows and FiniteAppFeature are the observation
// checks shared by the controllers.
//
// Concurrency: a Controller is used by one goroutine at a time; run one
// instance per environment. Controllers do not retain the observation
// passed to Act (the environment reuses its buffers); the Action returned
// is valid until the next call to Act or Reset.
//
// Determinism: a controller draws randomness only from the seed passed to
// Reset, through env.NewStream or env.NewSource with a stream named
// "agents/<controller>/<purpose>" (VRebalance: "agents/vrebalance/tier<i>").
// The same seed and observations give the same actions, bit for bit.
//
// Errors: Act rejects a malformed observation (wrong shape, a non-finite
// feature it reads) with an error prefixed "agents: " and without changing
// state; constructors validate their configuration.
package agents
