//go:build unix

package env

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the test process has used,
// for the benchmarks' per-core rates on a shared host (BenchmarkStep).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
