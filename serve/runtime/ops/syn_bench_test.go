package ops

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var synSink uint64

// threadCPU reads the calling thread's CPU clock (lock the thread first).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// BenchmarkSynWork measures SYN's loop: cpu-ns/iter is the thread CPU time
// per iteration (robust to a loaded machine, unlike ns/op, which is wall
// time per 1,000 iterations); synItersPerMicrosecond = 1000 / cpu-ns/iter.
func BenchmarkSynWork(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := uint64(1)
	c0 := threadCPU()
	for b.Loop() {
		x = synWork(x, 1000)
	}
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N)/1000, "cpu-ns/iter")
	synSink = x
}
