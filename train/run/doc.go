// Package run is the train command's wiring: it checks the options,
// builds the environment and ppo.Config for -env, runs the trainer with
// progress writers and a per-iteration hook (checkpoint, and for
// streamscale model selection on dev episodes), then saves the policy
// artifact and a summary. All file I/O of training happens here.
//
// The streamscale simulator is plugged in through NewSimulator
// (streamscale.go): the paper's four training scenarios per profile and
// held-out development scenarios for model selection. Determinism: everything random derives from the -seed
// root through named streams; wall-clock time only reaches time/fps,
// wall_seconds and sps.
package run
