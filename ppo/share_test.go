package ppo

import (
	"math"
	"sync"
	"testing"

	"streamscale/ppo/internal/nn"
)

// TestRowShareSameBits runs the actor half with its log-softmax rows
// shared with a helper goroutine, and alone, and wants the same gradient
// and outputs bit for bit; the helper follows the worker's protocol.
func TestRowShareSameBits(t *testing.T) {
	a, err := nn.NewArch(181, []int{64, 64}, []int{5, 5, 5, 5, 5, 5, 5, 5, 5})
	if err != nil {
		t.Fatal(err)
	}
	lg := newTestGraph(t, a, 256)
	alone := make([]float32, a.Size)
	if err := lg.runActor(alone); err != nil {
		t.Fatal(err)
	}
	logp := append([]float32(nil), vectorOf[float32](lg.logp)...)
	pg := scalarOf(lg.pg)
	for range 3 {
		shared := make([]float32, a.Size)
		lg.share.on = true
		var wg sync.WaitGroup
		wg.Go(func() { (<-lg.share.tasks).work() })
		err := lg.runActor(shared)
		wg.Wait()
		lg.share.on = false
		if err != nil {
			t.Fatal(err)
		}
		for i := range alone {
			if math.Float32bits(alone[i]) != math.Float32bits(shared[i]) {
				t.Fatalf("grad[%d]: %v shared, %v alone", i, shared[i], alone[i])
			}
		}
		for i, v := range vectorOf[float32](lg.logp) {
			if math.Float32bits(v) != math.Float32bits(logp[i]) {
				t.Fatalf("logp[%d]: %v shared, %v alone", i, v, logp[i])
			}
		}
		if scalarOf(lg.pg) != pg {
			t.Fatalf("pg %v shared, %v alone", scalarOf(lg.pg), pg)
		}
	}
}
