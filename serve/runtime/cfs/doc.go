// Package cfs enforces per-task CPU allocations inside a worker process the
// way Linux CFS bandwidth control does (Documentation/scheduler/sched-bwc.rst):
// a task allotted c millicores may use c/1000 × period of CPU time per
// period, measured with the executing threads' CPU clocks
// (CLOCK_THREAD_CPUTIME_ID); once its quota is spent it waits for the next
// period boundary.
//
// Units: allocations in millicores (1000 = one core), periods and CPU time
// as time.Duration. Inputs are clamped, never rejected: a period ≤ 0 means
// DefaultPeriod and millicores are clamped into [MinMillicores,
// MaxMillicores].
//
// Concurrency: a Quota is safe for concurrent use; every executor slot that
// runs the task's work calls Run on the same Quota and the slots share the
// quota. Run does not allocate.
//
// Determinism: periods are aligned on the instant New was called, so which
// calls wait, and for how long, is a function of the monotonic clock and the
// CPU each call used.
//
// Kernel enforcement: package kcfs runs a task in its own process under a
// CPU cgroup's quota (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us and
// cpu.cfs_period_us, the same kernel bandwidth control; the build machine
// has the v1 cpu controller) for serve worker -cpu-enforce kernel, and
// serve cfscheck measures this package's enforcement against it. One
// difference by design: a Quota charges only the CPU of the threads
// running the task's batches, while the kernel charges every thread of
// the process, so the process's I/O and runtime CPU (per batch, not per
// record) is outside the in-process quota.
package cfs
