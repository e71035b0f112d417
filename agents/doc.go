// Package agents holds the Controller contract that every autoscaling
// controller implements (PPO policies, VRebalance, CLASP, the simple
// baselines) and the simple baselines themselves.
//
// Units: allocations in millicores. Concurrency: a Controller is used by
// one goroutine at a time; run one instance per environment. Determinism:
// a controller draws randomness only from the seed passed to Reset.
package agents
