package rng

import (
	"hash/fnv"
	"math/rand/v2"
)

// Source returns the named random stream of a root seed: a PCG generator
// seeded with (seed, FNV-1a(name) XOR 0x9e3779b97f4a7c15), so that adding a
// new consumer never shifts an existing sequence. Stream names follow the
// package/purpose convention and are listed in names.go. A *rand.PCG
// implements encoding.BinaryMarshaler, so a stream's state can be saved
// and restored.
func Source(seed uint64, name string) *rand.PCG {
	return rand.NewPCG(seed, key(name))
}

// New returns a *rand.Rand over Source(seed, name).
func New(seed uint64, name string) *rand.Rand {
	return rand.New(Source(seed, name))
}

// Derive returns a child seed: the first draw of the named stream. Use it
// where a consumer takes a seed rather than a stream (an episode's Reset,
// one environment of a vector).
func Derive(seed uint64, name string) uint64 {
	return Source(seed, name).Uint64()
}

// Reseed resets src to the named stream of seed (what Source(seed, name)
// would return), without allocating.
func Reseed(src *rand.PCG, seed uint64, name string) {
	src.Seed(seed, key(name))
}

func key(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() ^ 0x9e3779b97f4a7c15
}
