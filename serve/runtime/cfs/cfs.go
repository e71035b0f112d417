// Package cfs enforces per-task CPU allocations inside a worker process the
// way Linux CFS bandwidth control does: a task allotted c millicores may use
// c/1000 × period of CPU time per period, measured with the executing
// threads' CPU clocks; once its quota is spent it waits for the next period.
package cfs

import "time"

// DefaultPeriod is the kernel's default cpu.cfs_period_us (100 ms).
const DefaultPeriod = 100 * time.Millisecond

// Quota is one task's CPU bandwidth. It is safe for concurrent use by the
// worker's executor slots.
//
// CONTRACT SKELETON: the implementation is being written; until then Run
// does not enforce anything.
type Quota struct {
	period     time.Duration
	millicores int
}

// New returns a quota of millicores per period.
func New(period time.Duration, millicores int) *Quota {
	return &Quota{period: period, millicores: millicores}
}

// Set changes the allocation; it takes effect from the current period.
func (q *Quota) Set(millicores int) { q.millicores = millicores }

// Millicores returns the current allocation.
func (q *Quota) Millicores() int { return q.millicores }

// Run waits until the task has quota left in the current period, runs f on a
// locked OS thread, measures the thread CPU time f used and charges it.
func (q *Quota) Run(f func()) { f() }

// Stats are cumulative counters since New.
type Stats struct {
	Used          time.Duration // CPU time charged
	Periods       int64         // periods elapsed in which the task ran
	Throttled     int64         // periods in which the quota ran out
	ThrottledTime time.Duration // time spent waiting for a new period
}

// Stats returns the counters.
func (q *Quota) Stats() Stats { return Stats{} }
