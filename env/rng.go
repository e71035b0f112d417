package env

import (
	"hash/fnv"
	"math/rand/v2"
)

// NewStream returns the named random stream of a root seed: a PCG generator
// whose state mixes the seed with the FNV-1a hash of name, so that adding a
// new consumer never shifts an existing sequence. Stream names follow the
// package/purpose convention, e.g. "env/placement" or "eval/bootstrap".
func NewStream(seed uint64, name string) *rand.Rand {
	return rand.New(NewSource(seed, name))
}

// NewSource is the PCG source behind NewStream. It is exported so callers
// can marshal and restore a stream's state (rand.PCG implements
// encoding.BinaryMarshaler).
func NewSource(seed uint64, name string) *rand.PCG {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.NewPCG(seed, h.Sum64()^0x9e3779b97f4a7c15)
}
