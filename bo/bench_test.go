package bo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkSuggest measures one GP suggestion (hyperparameter fit and
// acquisition maximization) with 30 observations in 9 dimensions, the size of
// the VRebalance use (CPU per task in [500, 10000] millicores, step 50).
func BenchmarkSuggest(b *testing.B) {
	dims := make([]Dim, 9)
	for i := range dims {
		dims[i] = Dim{Low: 500, High: 10000, Step: 50}
	}
	o, err := New(dims, DefaultConfig(), rand.NewPCG(1, 1))
	if err != nil {
		b.Fatal(err)
	}
	f := func(x []float64) float64 {
		var s float64
		for i, v := range x {
			s += math.Pow((v-1000*float64(i+1))/3000, 2)
		}
		return s
	}
	for range 30 {
		x, err := o.Suggest()
		if err != nil {
			b.Fatal(err)
		}
		if err := o.Observe(x, f(x)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		o.next = nil // force a new suggestion for the same observations
		if _, err := o.Suggest(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGPTune(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := randomData(rng, 30, 9)
	g := NewGP(9, 0.01)
	if err := g.Fit(x, y); err != nil {
		b.Fatal(err)
	}
	start := g.Params
	for b.Loop() {
		g.Params = start
		if err := g.Tune(2, rand.NewPCG(2, 2)); err != nil {
			b.Fatal(err)
		}
	}
}
