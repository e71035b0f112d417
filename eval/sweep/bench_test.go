package sweep

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkSweep runs the default sweep: 12 grid points × 3 placements ×
// 3,600 intervals (the goal: well under a minute on two cores).
func BenchmarkSweep(b *testing.B) {
	p := plan(DefaultGrid()...)
	p.Placements, p.Steps, p.Workload = Placements(3), 3600, flat(3600)
	for b.Loop() {
		if _, _, err := Execute(context.Background(), p, runtime.GOMAXPROCS(0), nil); err != nil {
			b.Fatal(err)
		}
	}
}
