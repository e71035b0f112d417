// Package run is the train command's wiring: it checks the options,
// builds the environment and ppo.Config for -env, runs the trainer with
// progress writers and a per-iteration hook (checkpoint, and for
// streamscale model selection on dev episodes), then saves the policy
// artifact and a summary. All file I/O of training happens here.
//
// -norm-obs and -norm-reward turn on SB3's VecNormalize (ppo.Config
// NormObs, NormReward); both are recorded in summary.json and the policy
// card. summary.json also carries learning diagnostics (Summary's
// comments define them): explained variance over the last quarter and at
// the end, the final entropy as a share of its maximum, the mean
// chosen-action probability of the last rollout, and the critic's error
// against realised discounted returns on the development episodes.
//
// Recipes (recipe.go): ReadRecipe reads a -config TOML file strictly
// (go-toml/v2 with unknown fields refused; a regular file of at most
// MaxRecipeBytes); Options.Resolved is the fully resolved recipe recorded
// in summary.json and on the policy card; Options.Config resolves the
// ppo.Config without I/O. RunSeeds (seeds.go) trains one recipe for
// several seeds side by side, each with Options.Threads of the machine's
// goroutines, which changes no result, and writes seeds.json. Before a
// run replaces a policy in -out it needs -force (or -resume).
//
// The streamscale simulator is plugged in through NewSimulator
// (streamscale.go): the paper's four training scenarios per profile and
// held-out development scenarios for model selection. Determinism: everything random derives from the -seed
// root through named streams; wall-clock time only reaches time/fps,
// wall_seconds and sps.
package run
