package runner

import (
	"context"
	"testing"
)

// BenchmarkRun measures one full evaluation episode (3,600 intervals) per
// controller kind; the paired protocol runs 40 of them per controller and
// must finish in under two minutes on two cores.
func BenchmarkRun(b *testing.B) {
	for _, ctrl := range []string{"static:2000", "threshold", "vrebalance", "clasp"} {
		b.Run(ctrl, func(b *testing.B) {
			s := spec(b, ctrl, 0)
			s.Workload = ramp(3600)
			for b.Loop() {
				if _, err := Run(context.Background(), s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
