// Package runtime is the planner/worker stream-processing runtime's shared
// part: the application registry (Apps) the commands resolve -app with, and
// placeholder applications (wc, syn, chain) that package ops replaces with
// the real operators at integration.
//
// The runtime itself is in the subpackages: wire (the binary protocol),
// transport (h2c streams with backpressure), worker (execution, keyed state,
// migration), planner (membership, ingress, latency, controllers) and
// provider/local (worker processes on this machine).
//
// Determinism: an application's source is a function of its seed (a PCG
// seeded by the seed the planner is given); the operators here are pure
// functions of their input and state. Nothing here is concurrent.
package runtime
