// Package policy is a trained PPO policy without the training machinery
// (no gorgonia): the artifact on disk, plain-Go inference, and the
// agents.Controller that runs it. Package ppo trains policies and writes
// them through this package; eval and serve load and run them.
//
// It owns: the artifact format — FileName.safetensors (PyTorch-layout F32
// tensors) and FileName.json (Card: spaces, training hyperparameters as
// recorded, seed, config hash, commit, Go version, weights SHA-256) —
// with Read, Load and Policy.WriteSafetensors; inference (Policy: Step,
// Act, Values, Evaluate, the per-dimension log-softmax of a MultiDiscrete
// head); the frozen VecNormalize statistics a policy trained with
// normalisation applies to every raw observation on entry (Normalization:
// card fields plus the F64 tensors obs_rms.mean and obs_rms.var; a policy
// without them behaves as before they existed); and Controller.
//
// # Numerics
//
// Weights are float32; each layer's weights are kept packed for the
// internal/sgemm kernel (packed when the policy is built, shared by its
// clones, repacked after WeightsChanged), so a single-observation pass is
// one matrix-vector product per layer. The kernels, tanh and log-softmax
// are those of ppo's training graph (internal/nn), so a Policy's values
// equal the graph's bit for bit. Observations are float64 and converted
// on entry; values and log-probabilities are reported as float64.
//
// Units: values are in the environment's reward units per step;
// observations are the environment's flat observation in the card's key
// order (app, server, task for streamscale); actions are the indices of
// each MultiDiscrete dimension.
//
// # Determinism
//
// Deterministic acting is the per-dimension argmax (first index on ties).
// Sampling draws one rng.Float64() per dimension from the caller's
// source; a Controller resets its source to the named stream
// rng.PPOAction of the seed given to Reset, so the same seed gives the
// same actions. Nothing here reads the clock, and the package does file
// I/O only through the fs.FS or io.Writer passed in.
//
// # Concurrency
//
// A Policy or Controller is not safe for concurrent use: calls reuse
// scratch buffers. Clone a Policy per goroutine; Clone itself may run
// concurrently with other Clones of the same policy.
package policy
