package kcfs

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConfine confines the test process to 100 millicores, spins two
// goroutines for 600 ms of wall time, and checks that the kernel held the
// whole process to its quota (an upper bound on its CPU, which host load
// can only lower, and throttled periods), then that Release put it back
// and removed the cgroup.
func TestConfine(t *testing.T) {
	requireCgroups(t)
	if _, err := Confine(0, DefaultPeriod); err == nil {
		t.Fatal("Confine(0 millicores) accepted")
	}
	c, err := Confine(100, DefaultPeriod)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release() //nolint:errcheck // checked below
	if c.Millicores() != 100 {
		t.Errorf("Millicores = %d, want 100", c.Millicores())
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	if !strings.Contains(string(self), Prefix) {
		t.Fatalf("the process is not in the confining cgroup: /proc/self/cgroup = %q", self)
	}
	before := processCPU()
	start := time.Now()
	const wall = 600 * time.Millisecond
	var wg sync.WaitGroup
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			x := 0
			for time.Since(start) < wall {
				for i := range 10000 {
					x ^= i
				}
			}
			_ = x
		})
	}
	wg.Wait()
	used, elapsed := processCPU()-before, time.Since(start)
	st, err := c.Stat()
	if err != nil {
		t.Fatal(err)
	}
	// 100 mc is 10 ms per 100 ms period; allow half as much again (the
	// kernel lets each CPU overrun a spent quota by up to a scheduler
	// tick) and one more period's slack. Unconfined, the spinners take up
	// to GOMAXPROCS × 600 ms.
	limit := time.Duration(float64(elapsed)*0.1*1.5) + 30*time.Millisecond
	t.Logf("CPU %v over %v (limit %v), %d of %d periods throttled", used, elapsed, limit, st.Throttled, st.Periods)
	if used > limit {
		t.Errorf("the process used %v of CPU in %v under a 100 mc quota, want ≤ %v", used, elapsed, limit)
	}
	if st.Throttled < 1 {
		t.Errorf("cpu.stat: %d throttled periods of %d, want ≥ 1 while spinning", st.Throttled, st.Periods)
	}
	dir := c.Dir()
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Release: %v", dir, err)
	}
	if self, _ := os.ReadFile("/proc/self/cgroup"); strings.Contains(string(self), Prefix) {
		t.Errorf("the process is still in a confining cgroup after Release: %q", self)
	}
}
