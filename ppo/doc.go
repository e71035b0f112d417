// Package ppo is Proximal Policy Optimization (Schulman et al. 2017) in
// pure Go, reproducing Stable-Baselines3's PPO (v2.x) as the paper
// configures it. It is the only package that imports gorgonia; the trained
// policy — its artifact, plain-Go inference and agents.Controller — is
// package ppo/policy, which serve and eval use without the trainer.
//
// It owns: the hyperparameters (Config, one line of doc per field,
// DefaultConfig = the paper), the consumer-side environment interface
// (VecEnv, StepResult), the trainer (Trainer: rollouts, GAE, clipped
// surrogate and value losses, Adam with global-norm clipping, checkpoints),
// SB3's metrics as one Stats row per iteration handed to a Logger (the
// train command writes them to files), and NewCard, which records a
// Config in a policy.Card.
//
// The algorithm reads top to bottom in trainer.go: Learn → collect
// (rollout, normalisation, truncation bootstrap, gae) → update (epochs of
// shuffled minibatches) → minibatch (loss graph, clip, Adam).
//
// # Normalisation
//
// Config.NormObs and Config.NormReward (off by default: the paper trains
// on raw observations and rewards) reproduce SB3's VecNormalize in
// training mode around the VecEnv (normalize.go): RunningMeanStd (count
// from 1e-4, parallel-variance merge of each batch of N observations after
// reset and after every step), observations normalised as
// clip((x − μ)/√(σ² + 1e-8), ±ClipObs), rewards divided by √(var + 1e-8)
// of the running γ-discounted return (reset where an episode ends) and
// clipped to ±ClipReward, the truncation bootstrap added to the scaled
// reward with the final observation normalised by the step's statistics.
// The policy applies the observation statistics itself
// (policy.Normalization): the trainer hands them to it after each update,
// a Policy snapshot and a saved artifact carry them frozen, and the
// checkpoint holds them with the per-env returns.
//
// # Numerics
//
// Training is float32, as PyTorch trains SB3's policies. Gradients come
// from a gorgonia graph built once per minibatch size (graph.go) whose
// ops, with the gradient nodes gorgonia's symbolic differentiation added,
// are re-run in topological order on the calling goroutine (exec.go,
// instead of a TapeMachine); its inputs and parameters are views of
// the trainer's buffers. A few gorgonia ops are replaced by this package's
// own ops with symbolic gradients (ops.go): the matrix product (through
// internal/sgemm: AVX-512 or AVX2+FMA kernels chosen at run time that read
// the operands in place, and without the unused gradient of the
// observation batch), tanh and exp (float64 math.Exp rather than a
// software float32 exp), the bias add, the per-dimension log-softmax
// (gorgonia's spawns a goroutine per row and its reshapes alias memory
// that in-place ops then overwrite), and log π(a|s) and Σ p·log p as
// fused sums of products (rowDot, sumProd) whose gradients skip the
// broadcasts gorgonia's Sum materialised. Element-wise work (bias add,
// column sums, the tanh and exp gradients, Adam fused with the clipping
// scale over each net's flat range) runs through internal/nn's vector
// kernels (eight float32 lanes; tanh eight float64 lanes with AVX-512). Every replacement performs the float operations of the
// code it replaced in the same order (vector lanes are independent
// elements; reductions keep their sequential order), so training gives
// the same bits as before on a machine of the same kind
// (TestTrainGolden pins them; the purego build tag selects plain Go). The
// full loss gradient is checked against finite differences in float64
// (TestLossGradientFiniteDifference). Scalars outside the graph — GAE,
// returns, advantage normalisation, norms, the Adam bias corrections — are
// float64. The Trainer's policy.Policy views the trainer's weights and
// evaluates the nets with the same kernels (internal/nn, internal/sgemm),
// so its values equal the graph's bit for bit (TestPolicyMatchesGraph);
// every Adam step tells it to repack (WeightsChanged).
//
// Units: rewards and values are in the environment's units per step;
// learning rate per Adam step; timesteps count env steps summed over envs.
//
// # Determinism
//
// One root seed (Config.Seed) feeds the named streams of package rng:
// rng.PPOInit (initial weights, never gorgonia's clock-seeded
// initialisers), rng.PPOShuffle (minibatch permutations) and rng.PPOAction
// (action sampling); the VecEnv is reset with the same root seed and
// derives its environments' seeds from it. Floats are reduced in fixed order. With
// Options.Workers = 2 an update runs the actor half of each minibatch on
// the calling goroutine and, on a worker goroutine, the critic half, the
// critic's share of the gradient-norm terms and of the Adam step, and the
// loading of the next minibatch into a second graph (update.go); each
// goroutine writes only its own graph, gradient, parameter and optimiser
// ranges, and the per-parameter norm terms are combined in parameter
// order, so the result does not depend on scheduling: one seed gives bitwise-identical
// weights whatever the worker count, and a run resumed from a checkpoint
// ends bitwise identical to an uninterrupted one (for a StatefulVecEnv).
// The package never reads the clock (Options.Clock feeds time/fps) and
// does no file I/O: writers and readers are passed in.
//
// # Concurrency
//
// A Trainer is not safe for concurrent use; Trainer.Policy returns a
// snapshot that is independent of it. A gorgonia graph and its program
// are used by one goroutine at a time.
package ppo
