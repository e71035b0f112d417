package ppo

import (
	"math"
	"math/rand/v2"
	"testing"

	"streamscale/ppo/internal/nn"
)

// TestExpCacheGradientBitwise holds the log-softmax gradient from cached
// exponentials to the one that computes them, bit for bit, and checks
// that the cache answers only for the very input it saw.
func TestExpCacheGradientBitwise(t *testing.T) {
	nvec := []int{5, 5, 3}
	const rows = 64
	r := rand.New(rand.NewPCG(3, 4))
	x, g := make([]float32, rows*13), make([]float32, rows*13)
	for i := range x {
		x[i], g[i] = float32(r.NormFloat64()*3), float32(r.NormFloat64())
	}
	y := make([]float32, len(x))
	nn.LogSoftmaxRows(y, x, nvec)
	var c expCache
	p := make([]float32, len(y))
	c.expInto(p, y)
	for i, v := range y {
		if want := float32(math.Exp(float64(v))); p[i] != want {
			t.Fatalf("exp(%g) = %g, want %g", v, p[i], want)
		}
	}
	e := c.of(y)
	if e == nil {
		t.Fatal("cache does not answer for its own input")
	}
	got, want := make([]float32, len(y)), make([]float32, len(y))
	logSoftmaxGradExp(got, e, g, nvec)
	logSoftmaxGrad(want, y, g, nvec)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("gradient %d: %g from the cache, %g computed", i, got[i], want[i])
		}
	}
	y2 := append([]float32(nil), y...)
	y2[len(y2)-1] = math.Nextafter32(y2[len(y2)-1], 0)
	if c.of(y2) != nil || c.of(y[:13]) != nil || (*expCache)(nil).of(y) != nil {
		t.Error("cache answered for another input")
	}
}
