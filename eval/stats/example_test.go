package stats_test

import (
	"fmt"

	"streamscale/eval/stats"
	"streamscale/rng"
)

// Candidate throughput against a baseline on five paired placements: the
// relative difference and its 95% percentile-bootstrap interval.
func ExampleBootstrapMean() {
	cand := []float64{990, 1003, 985, 1010, 970}
	base := []float64{1000, 1000, 1000, 1000, 1000}
	d, _ := stats.RelDiff(cand, base)
	ci, _ := stats.BootstrapMean(d, 10000, 0.95, rng.Source(1, "eval/bootstrap"))
	fmt.Printf("mean %.2f%%, 95%% CI [%.2f, %.2f], non-inferior at 5%%: %v\n", ci.Mean, ci.Lo, ci.Hi, ci.NonInferior(5))
	// Output:
	// mean -0.84%, 95% CI [-2.04, 0.32], non-inferior at 5%: true
}
