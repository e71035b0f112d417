//go:build !unix

package env

import "time"

// processCPU reports no CPU time where getrusage is missing; the
// benchmarks then omit their per-core rate.
func processCPU() (time.Duration, bool) { return 0, false }
