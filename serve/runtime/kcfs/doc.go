// Package kcfs runs a task's operator work in its own process under the
// Linux kernel's CFS bandwidth control, to check the runtime's in-process
// enforcement (package cfs) against the kernel's (issue 13).
//
// # CPU cgroups (cgroup.go)
//
// Detect finds a CPU cgroup this process may create children in: cgroup
// v2 when the cpu controller is enabled in the unified hierarchy (a
// cgroup's quota is cpu.max "quota period"), else the v1 cpu controller
// (cpu.cfs_quota_us and cpu.cfs_period_us: the same kernel mechanism,
// Documentation/scheduler/sched-bwc.rst). It probes by making,
// configuring and removing a cgroup; when neither version is usable its
// error (ErrUnavailable) gives the reason for each: no mount, no cpu
// controller, a read-only mount, not permitted (not root and no
// delegation), or, on v2, a cpu controller that cannot be enabled for
// children. Task cgroups are named Prefix + "<pid>-<n>" after the
// creating process; RemoveStale removes those of dead processes (run it at
// start), a host's Close or failed start removes its own. A quota is
// millicores/1000 × period per period, at least the kernel's 1 ms.
// cpu.stat gives the periods and throttled periods (nr_periods,
// nr_throttled) and throttled time.
//
// # Task hosts (host.go, frame.go)
//
// A task host is a child process (the serve binary's hidden "serve
// taskhost" subcommand) that runs one operator instance. The parent
// speaks to it over its stdin and stdout in frames: a 4-byte
// little-endian length, a type byte and a body (hello, ready, set, batch,
// result, error; MaxFrame and MaxRecords bound them, and every decoder is
// fuzzed). A batch carries records (key, input, seq, payload); its result
// carries a failed flag per record, the records emitted (parent record,
// successor, key, payload), the host's process CPU and, in InProcess mode,
// its cfs.Quota's counters. In Kernel mode the child is moved into a fresh
// cgroup whose quota is the allocation before it is told what to run, and
// Set rewrites the quota; in InProcess mode the host wraps each batch in a
// cfs.Quota and Set changes it. The worker's -cpu-enforce kernel uses
// Kernel hosts (worker.Config.Hosts) for apps whose operators keep no
// keyed state: keyed state, migrations and checkpoints live in the
// worker, so stateful operators are refused at start. A host keeps its
// operator's state (if any) in its own memory, which Check uses.
//
// # The check (check.go)
//
// Check runs one operator's real per-event work (its inputs produced by
// the app's source and predecessors) in a task host under each mode, each
// allocation and each offered load — saturation (closed loop) and
// open-loop fractions of the saturated event rate — and reports per point
// the host's CPU per second over the quota (all of its CPU, and the CPU
// the mode's accounting charged), the share of periods throttled and the
// event latency distribution. "serve cfscheck" prints it.
//
// Units: millicores (1000 = one core), durations as time.Duration,
// latencies in the report in ms.
//
// Concurrency: a Host's Send and Recv may run in two goroutines (one
// each); Exec, Set and Stats are safe for concurrent use; Close must not
// run while a Recv or Exec waits. A Controller is safe for concurrent use.
//
// Determinism: the inputs are a function of the seed; the figures are
// measurements of a shared machine and are not reproducible.
package kcfs
