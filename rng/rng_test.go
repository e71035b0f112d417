package rng

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"
)

func TestSameSeedSameStream(t *testing.T) {
	a, b := New(7, PPOInit), New(7, PPOInit)
	for i := 0; i < 100; i++ {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: %d != %d", i, x, y)
		}
	}
}

func TestStreamsDiffer(t *testing.T) {
	seen := map[uint64]string{}
	for _, name := range []string{EnvPlacement, EnvArrivals, EnvService, EnvJitter, EnvMetrics, EnvVec + "0/0", PPOInit, PPOShuffle, PPOAction, TrainEnv + "0", TrainEnv + "1"} {
		for _, seed := range []uint64{0, 1, 284572} {
			x := Derive(seed, name)
			if prev, ok := seen[x]; ok {
				t.Fatalf("%s seed %d repeats %s", name, seed, prev)
			}
			seen[x] = name
		}
	}
}

// The formula is fixed: changing it changes every number streamscale
// draws, so it is pinned here.
func TestFormula(t *testing.T) {
	h := fnv.New64a()
	h.Write([]byte("env/placement"))
	want := rand.NewPCG(42, h.Sum64()^0x9e3779b97f4a7c15).Uint64()
	if got := Derive(42, EnvPlacement); got != want {
		t.Fatalf("Derive = %d, want %d", got, want)
	}
	src := Source(1, "x")
	Reseed(src, 42, EnvPlacement)
	if got := src.Uint64(); got != want {
		t.Fatalf("Reseed = %d, want %d", got, want)
	}
}
