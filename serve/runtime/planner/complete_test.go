package planner

import (
	"math/rand/v2"
	"testing"

	"streamscale/serve/runtime/wire"
)

// TestCompletionExact holds the weight-based completion against the
// obvious reference (count the records): for random trees of chained
// records whose completion notices arrive in random order, an input
// completes at its last notice and not one notice earlier. (A record whose
// children take all its weight sends no notice: its children exist only
// because it executed.)
func TestCompletionExact(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	for trial := range 300 {
		p := &Planner{clock: Real, start: Real.Now()}
		p.ins = []input{{}}
		// Expand the tree breadth-first: each record returns its kept
		// weight in one notice.
		type rec struct{ exp uint8 }
		recs := []rec{{0}}
		var notices []wire.DoneEntry
		depth := 0
		for len(recs) > 0 && depth < 12 {
			var next []rec
			for _, x := range recs {
				k := 0
				if depth < 5 && r.IntN(3) > 0 {
					k = r.IntN(13)
				}
				ce, back, ok := wire.Split(x.exp, k)
				if !ok {
					k = 0
				}
				if back != (wire.Weight{}) { // workers send no empty notice
					notices = append(notices, wire.DoneEntry{Input: inputID(0, 0), W: back})
				}
				for range k {
					next = append(next, rec{ce})
				}
			}
			recs = next
			depth++
		}
		for _, x := range recs { // leaves left at the depth limit
			notices = append(notices, wire.DoneEntry{Input: inputID(0, 0), W: wire.ExpWeight(x.exp)})
		}
		r.Shuffle(len(notices), func(i, j int) { notices[i], notices[j] = notices[j], notices[i] })
		for i, n := range notices {
			p.complete([]wire.DoneEntry{n})
			if done := p.completed == 1; done != (i == len(notices)-1) {
				t.Fatalf("trial %d: after notice %d of %d completed=%v", trial, i+1, len(notices), done)
			}
		}
		// A repeated notice is a duplicate, never a second completion.
		p.complete(notices[:1])
		if p.completed != 1 || p.dup != 1 {
			t.Fatalf("trial %d: a repeated notice gave completed %d, dup %d", trial, p.completed, p.dup)
		}
	}
}
