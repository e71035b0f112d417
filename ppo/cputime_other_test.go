//go:build !unix

package ppo

import "time"

// cpuTime is unknown on this platform: BenchmarkUpdate reports no CPU time.
func cpuTime() time.Duration { return 0 }
