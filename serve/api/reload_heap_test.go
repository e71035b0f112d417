package api

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// heapAfterGC is the live heap after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestReloadHeapBounded: 1,000 admin reloads in a row, under the
// collector settings serve api runs with (GOGC=400 with a memory limit;
// here 64 MiB), leave the live heap after GC where one reload leaves it
// (old registries are not retained), and the heap in use, sampled every
// ten reloads, stays near the limit. (Without the limit, GOGC=400 let the
// heap in use reach about 1 GiB over the same reloads: each allocates
// about 2 MB.) The server's clock ticks a second per reading, past the
// reload rate limit.
func TestReloadHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 reloads")
	}
	const limit = 64 << 20
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	s := newTestServer(t, "", testToken)
	s.now = tickingClock(time.Second)
	auth := []string{"Authorization", "Bearer " + testToken}
	for range 10 {
		okStatus(t, do(s, "POST", "/admin/reload", nil, auth...))
	}
	base := heapAfterGC()
	var peakInuse, peakLive uint64
	for i := range 1000 {
		okStatus(t, do(s, "POST", "/admin/reload", nil, auth...))
		if i%10 == 9 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peakInuse = max(peakInuse, ms.HeapInuse)
		}
	}
	for range 10 {
		okStatus(t, do(s, "POST", "/admin/reload", nil, auth...))
		peakLive = max(peakLive, heapAfterGC())
	}
	t.Logf("live heap after GC: %d KiB after 10 reloads, at most %d KiB after 1,010; heap in use at most %d MiB (limit %d MiB)",
		base>>10, peakLive>>10, peakInuse>>20, limit>>20)
	if peakLive > base+8<<20 {
		t.Errorf("live heap grew from %d KiB to %d KiB over 1,000 reloads", base>>10, peakLive>>10)
	}
	if peakInuse > limit+limit/2 {
		t.Errorf("heap in use reached %d MiB, limit %d MiB", peakInuse>>20, limit>>20)
	}
}
