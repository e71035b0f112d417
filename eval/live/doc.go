// Package live runs vertical controllers against the real planner/worker
// runtime (serve/runtime): a planner in this process, worker processes on
// loopback (provider/local), a trace replayed open-loop, and every control
// interval the simulator's observation built from the runtime's reports
// (Observer), the controller asked, and its action applied to the tasks'
// CFS quotas through the planner's Allocate hook.
//
// Horizontal runs (RunHorizontal) replay a trace on a CLASP application
// while the planner's own placement loop (CLASP or any clasp.Planner
// behind CLASP's triggers) decides workers and placement with migration;
// each interval records the window, the workers in use and the quotas.
// Both kinds can attach to a running planner service instead of starting
// one (Config.Planner, HConfig.Planner; attach.go): the service replays
// the same trace slice and reports every interval through its control
// API, and the same code records it.
//
// The probes of `eval calibrate` (the step probe, the service times and
// CLASP's cost-model microbenchmarks) live in package eval/calibrate,
// which runs them through Run and the planner; this package keeps the
// live-run machinery they share (BudgetFlag, ProcessBudgetMiss).
//
// Mapping onto the simulator. One control interval is one trace point and
// stands for the simulator's one-second step; it lasts Config.Step of wall
// time (the time compression). Allocations are the scenario's millicores
// (env.EdgeConfig of the profile and placement seed: clipped to [MinCPU,
// MaxCPU] and projected onto its servers exactly as env.Step does); a task
// allotted A of them gets A·CPUScale/Workers millicores of quota in each
// worker process, which runs an even share of every operator's key groups.
// The observation's server rows are the scenario's servers under its
// placement (exact features in the simulator too); the measured task and
// application features come from the workers' reports and the window's
// end-to-end latencies (Observer documents each); env.ObsBuilder turns
// them into the observation, as it does in the simulator.
//
// Units: latencies in ms in records, s inside the observation as env
// normalises them; rates per second of wall time.
//
// Determinism: none. A live run depends on real time and on the machine's
// load; Run records the seed (input source and controller) and the
// configuration so that a rerun is the same experiment, not the same
// numbers. The Observer and Apply are deterministic functions of their
// inputs. On a busy host a run can record fewer intervals than asked: the
// planner's ticks that the host missed are caught up after the load, and
// their empty windows are not recorded (emptyCatchUp); Config.Observe
// hands over the observation of every recorded interval, whether or not
// the controller then answered in time. Interval p95s are nearest-rank
// quantiles (gonum's stat.Empirical).
//
// Concurrency: Run owns its goroutines and processes and stops them
// before it returns (also when ctx ends); the controller is never called
// concurrently.
package live
