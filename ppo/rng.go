package ppo

import (
	"hash/fnv"
	"math/rand/v2"
)

// Names of the random streams this package draws from. Each is a PCG
// generator seeded from (root seed, FNV-1a hash of the name), so adding a
// consumer never shifts an existing sequence.
const (
	StreamInit    = "ppo/init"    // orthogonal weight initialisation
	StreamShuffle = "ppo/shuffle" // minibatch permutations
	StreamAction  = "ppo/action"  // action sampling during rollouts
)

// NewStream returns the PCG generator for the named stream under seed.
func NewStream(seed uint64, name string) *rand.PCG {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.NewPCG(seed, h.Sum64())
}
