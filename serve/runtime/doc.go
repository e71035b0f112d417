// Package runtime is the planner/worker stream-processing runtime's shared
// part: the application registry (Apps) the commands resolve -app with —
// the real applications of package ops, plus chain (ten no-op operators,
// for measuring dispatch alone) — and the runtime's own small test
// applications (Builtin: wc, syn, chain), whose outputs its tests check
// exactly.
//
// The runtime itself is in the subpackages: wire (the binary protocol),
// transport (h2c streams with backpressure), worker (execution, keyed state,
// migration), planner (membership, ingress, latency, controllers) and
// provider/local (worker processes on this machine) and provider/k8s (a
// Kubernetes StatefulSet); ops (the real operators) and cfs (CPU
// bandwidth control).
//
// Determinism: an application's source is a function of its seed (a PCG
// seeded by the seed the planner is given); the operators here are pure
// functions of their input and state. Nothing here is concurrent.
package runtime
