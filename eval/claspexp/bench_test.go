package claspexp

import (
	"testing"

	"streamscale/agents/horizontal"
	"streamscale/clasp"
	"streamscale/env"
)

// BenchmarkClusterStep times one simulated second of SYN on 10 shared-CPU
// workers: CLASP's packing (a chain cut into contiguous pieces) and an even
// spread of every operator over every worker (100 replicas, every sender
// talking to every receiver), at 600 events/s.
func BenchmarkClusterStep(b *testing.B) {
	app := clasp.SYN()
	even := make([][]float64, 10)
	for w := range even {
		even[w] = make([]float64, len(app.Operators))
		for o := range even[w] {
			even[w][o] = 0.1
		}
	}
	ids, packed, err := CLASPPlacer(10)(app, 600)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		shares [][]float64
	}{{"clasp", packed}, {"spread", even}} {
		b.Run(c.name, func(b *testing.B) {
			reps, err := horizontal.ReplicasFromShares(ids, c.shares, 10)
			if err != nil {
				b.Fatal(err)
			}
			cfg, err := ClusterConfig(app, 10, 600, 1<<30, reps)
			if err != nil {
				b.Fatal(err)
			}
			e, err := env.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			e.Reset(1)
			hold := env.Action{Hold: true}
			for range 20 { // warm up to steady state
				e.Step(hold)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := e.Step(hold); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
