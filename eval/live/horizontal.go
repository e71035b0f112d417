package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"streamscale/clasp"
	"streamscale/env"
	"streamscale/eval/runner"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
	"streamscale/serve/runtime/provider/local"
	"streamscale/traces"
)

// HConfig is one live run of a horizontal controller: the planner's
// placement loop (CLASP or any clasp.Planner behind CLASP's triggers, fed
// CLASP's Table 2 observation from the workers' reports) decides the worker
// count and the placement, with migration, while the trace is replayed.
type HConfig struct {
	// App is the runtime application (ops.AppByName: wc, sd, aa, pl, nwm,
	// syn, …).
	App ops.App
	// Trace is replayed open-loop from its point 0, one point per Step.
	Trace *traces.Trace
	// Step is the wall time of one trace point and of one control
	// interval (the planner runs its placement loop every Step).
	Step time.Duration
	// Intervals is the number of trace points replayed.
	Intervals int
	// Seed seeds the input source.
	Seed uint64
	// Workers is the worker count before the controller's first placement
	// (default 1); MaxWorkers bounds the controller (default 8).
	Workers, MaxWorkers int
	// TaskMillicores is every task's CFS quota in every worker (default
	// 1000): the per-worker capacity the placement controller scales.
	TaskMillicores int
	// WorkerBudget, if > 0, is a CPU budget in millicores every worker's
	// tasks share on top of TaskMillicores (worker.Config.Budget, serve
	// worker -budget): a worker as CLASP's cost model sees one, a budget W
	// shared by the functions it hosts. 0: none (each task has its own
	// TaskMillicores). Not with Planner (the service starts its workers).
	// With a budget the controller's τ̄ is CPU time per execution
	// (planner.Config.ExecCPU), so that W is the budget; give it a cost
	// model probed with the same budget (CostProbe.WorkerBudget).
	WorkerBudget int
	// WorkerBudgetProcess makes WorkerBudget the kernel's CFS quota on the
	// whole worker process (serve worker -process-budget, kcfs.Confine: a
	// container CPU limit, so transport, decoding and dispatch draw on it
	// as the operators do, as Eq. 1's α, β and γ terms share W) instead of
	// the in-process quota over its tasks' executions only. Needs a
	// writable CPU cgroup (root).
	WorkerBudgetProcess bool
	// SLOMS is the end-to-end p95 an interval must stay under (default
	// 1000 ms); it only marks intervals violated.
	SLOMS float64
	// Name is the controller's name; NewPlacer builds it (nil: no
	// controller, Workers stay fixed with even shares).
	Name      string
	NewPlacer func() (clasp.Planner, error)
	// Worker processes, as in Config.
	WorkerBin  string
	WorkerArgs []string
	WorkerEnv  []string
	// Log receives the planner's and the workers' events (nil: discarded).
	Log io.Writer
	// Planner and PlannerToken attach to a running planner service, as in
	// Config; the service runs its own placement controller (NewPlacer is
	// then only a flag: nil asks for a fixed-worker replay).
	Planner      string
	PlannerToken string
}

// HInfo is what a horizontal live run records beyond runner.Result: the
// run-level figures of the CLASP paper's experiments.
type HInfo struct {
	StepS          float64 `json:"step_s"`
	TaskMillicores int     `json:"task_millicores"`
	WorkerBudget   int     `json:"worker_budget_millicores,omitempty"`
	BudgetProcess  bool    `json:"worker_budget_process,omitempty"`
	MaxWorkers     int     `json:"max_workers"`
	Inputs         uint64  `json:"inputs"`
	Completed      uint64  `json:"completed"`
	// Dropped, Unfinished and Lost (= Dropped) as Info's.
	Dropped    uint64 `json:"dropped"`
	Unfinished uint64 `json:"unfinished"`
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
	// Delivered is Completed / Inputs (1 when nothing was offered).
	Delivered float64 `json:"delivered"`
	// P50MS and P95MS are over every input of the run (completion minus
	// intended send time).
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	// MeanWorkers and PeakWorkers are the workers in use over the
	// intervals; FinalWorkers those at the end of the load.
	MeanWorkers  float64 `json:"mean_workers"`
	PeakWorkers  int     `json:"peak_workers"`
	FinalWorkers int     `json:"final_workers"`
	// Migrations counts the reconfigurations; PlannerMSMax is the longest
	// planner-side migration and WorkerPauseMSMax the longest worker pause.
	Migrations       int                 `json:"migrations"`
	PlannerMSMax     float64             `json:"migration_planner_ms_max"`
	WorkerPauseMSMax float64             `json:"migration_worker_pause_ms_max"`
	MigrationLog     []planner.Migration `json:"migration_log,omitempty"`
	// Failovers counts the workers declared dead (missed heartbeats) and
	// failed over; on a loaded host a starved worker can miss its beats.
	Failovers int `json:"failovers"`
	// BeatGapMSP99 and BeatGapMSMax are the 99th percentile and the
	// largest time between two heartbeats of one worker as the planner
	// read them (planner.Result): how near the workers came to a failover.
	BeatGapMSP99 float64 `json:"beat_gap_ms_p99"`
	BeatGapMSMax float64 `json:"beat_gap_ms_max"`
	// MeanCPUUsedCores is the mean CPU the tasks used, cores.
	MeanCPUUsedCores float64 `json:"mean_cpu_used_cores"`
	// Per interval (as eval clasp's mode rows): workers in use, offered
	// and completed inputs/s, and p95 ms.
	WorkersPerStep    []int     `json:"workers_per_step"`
	OfferedPerStep    []float64 `json:"offered_per_step"`
	ThroughputPerStep []float64 `json:"throughput_per_step"`
	P95PerStep        []float64 `json:"p95_ms_per_step"`
	// EmptyCatchUps counts the planner's catch-up rounds with an empty
	// window (emptyCatchUp), not recorded as intervals.
	EmptyCatchUps int `json:"empty_catch_up_rounds,omitempty"`
}

func (c *HConfig) fill() error {
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = 8
	}
	if c.TaskMillicores == 0 {
		c.TaskMillicores = 1000
	}
	if c.SLOMS == 0 {
		c.SLOMS = 1000
	}
	if c.WorkerArgs == nil {
		c.WorkerArgs = []string{"worker"}
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case len(c.App.Operators) == 0:
		return errors.New("live: no application")
	case c.Trace == nil:
		return errors.New("live: no trace")
	case c.Step < 10*time.Millisecond:
		return fmt.Errorf("live: step %v, want ≥ 10ms", c.Step)
	case c.Intervals < 1:
		return fmt.Errorf("live: %d intervals, want ≥ 1", c.Intervals)
	case c.Workers < 1 || c.MaxWorkers < c.Workers || c.MaxWorkers > 16:
		return fmt.Errorf("live: %d initial and %d most workers, want 1 ≤ initial ≤ most ≤ 16", c.Workers, c.MaxWorkers)
	case c.TaskMillicores < 1 || c.TaskMillicores > 64000:
		return fmt.Errorf("live: task millicores %d, want 1..64000", c.TaskMillicores)
	case c.WorkerBudget < 0 || c.WorkerBudget > 64000:
		return fmt.Errorf("live: worker budget %d millicores, want 0 (none) or 1..64000", c.WorkerBudget)
	case c.WorkerBudgetProcess && c.WorkerBudget == 0:
		return fmt.Errorf("live: a process budget needs a worker budget > 0")
	case c.WorkerBudget > 0 && c.Planner != "":
		return errors.New("live: a worker budget with an attached planner: the service starts its own workers")
	case !(c.SLOMS > 0) || math.IsInf(c.SLOMS, 0):
		return fmt.Errorf("live: SLO %v ms, want > 0", c.SLOMS)
	}
	return nil
}

// RunHorizontal runs the planner with its placement loop on the runtime:
// Workers worker processes to start with, the trace replayed open-loop,
// and every Step the controller's plan applied (new workers started by the
// local provider, key groups migrated, drained workers stopped). One
// runner.Interval per Step records the window's offered and completed
// inputs, its p95 and mean latency (corrected for coordinated omission,
// open inputs counted by their age as in Run), ActiveServers = workers in
// use, TotalCPU = their quota (workers × operators × TaskMillicores) and
// Replanned when a migration started in it. HInfo carries the CLASP
// paper's figures. Live runs are not reproducible.
func RunHorizontal(ctx context.Context, c HConfig) (runner.Result, HInfo, error) {
	if err := c.fill(); err != nil {
		return runner.Result{}, HInfo{}, err
	}
	nOps := len(c.App.Operators)
	res := runner.Result{
		Key:   runner.Key{Profile: c.App.Name, Trace: c.Trace.Name, Scenario: "live", Seed: c.Seed, Controller: c.Name},
		SLOMS: c.SLOMS,
	}
	for _, o := range c.App.Operators {
		res.Tasks = append(res.Tasks, o.Name)
	}
	info := HInfo{StepS: c.Step.Seconds(), TaskMillicores: c.TaskMillicores, WorkerBudget: c.WorkerBudget, BudgetProcess: c.WorkerBudgetProcess, MaxWorkers: c.MaxWorkers}
	var (
		pl       *planner.Planner
		mu       sync.Mutex
		cpuUsed  float64
		last     time.Time
		workers  float64
		loadEnds = time.Duration(c.Intervals) * c.Step
	)
	// record records one interval: the window, the workers in use and
	// their reports, at now seconds after the load started.
	record := func(w planner.Window, inUse int, tasks []planner.TaskObs, now float64, t time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.Intervals) >= c.Intervals || time.Duration(now*float64(time.Second)) > loadEnds+c.Step/2 {
			return // draining
		}
		if emptyCatchUp(w) {
			info.EmptyCatchUps++
			return
		}
		span := c.Step.Seconds()
		if !last.IsZero() {
			span = max(span, t.Sub(last).Seconds()) // a migration held the loop
		}
		last = t
		iv := runner.Interval{Step: int64(len(res.Intervals)), Offered: float64(w.Offered) / span,
			Throughput: float64(len(w.LatencyMS)) / span, SinkEvents: float64(len(w.LatencyMS)),
			P95MS: p95(w.LatencyMS, w.OpenAgeMS), Queue: make([]float64, nOps), Applied: make([]float64, nOps)}
		for _, x := range w.LatencyMS {
			iv.MeanMS += x
		}
		if len(w.LatencyMS) > 0 {
			iv.MeanMS /= float64(len(w.LatencyMS))
		}
		for _, tk := range tasks {
			cpuUsed += tk.CPUCores
			if tk.Op >= 0 && tk.Op < nOps {
				iv.Queue[tk.Op] += tk.Queue
				iv.Applied[tk.Op] += float64(tk.Millicores)
			}
		}
		iv.ActiveServers = int64(inUse)
		for _, a := range iv.Applied {
			iv.TotalCPU += a
		}
		if c.WorkerBudget > 0 { // the tasks' quotas, as far as the budgets let them
			iv.TotalCPU = min(iv.TotalCPU, float64(inUse*c.WorkerBudget))
		}
		iv.ReservedCPU = iv.TotalCPU
		iv.Violated = iv.P95MS > c.SLOMS
		workers += float64(inUse)
		info.PeakWorkers = max(info.PeakWorkers, inUse)
		info.FinalWorkers = inUse
		res.Intervals = append(res.Intervals, iv)
	}
	hook := func(now float64, tasks []planner.TaskObs) map[uint32][]int {
		record(pl.TakeWindow(), pl.PlacedWorkers(), tasks, now, time.Now())
		return nil
	}
	var pr planner.Result
	if c.Planner != "" {
		alloc := make([]int, nOps)
		for i := range alloc {
			alloc[i] = c.TaskMillicores
		}
		a := attachment{addr: c.Planner, token: c.PlannerToken, app: c.App, log: c.Log, controller: c.Name,
			req: startRequest(c.App, planner.ModeHorizontal, c.Trace, c.Intervals, c.Step, c.Seed, c.Workers, alloc)}
		if c.NewPlacer == nil {
			a.req.Mode, a.controller = planner.ModeVertical, "" // fixed workers: no placement loop
		}
		var err error
		if pr, err = attach(ctx, a, func(iv planner.IntervalReport) map[uint32][]int {
			record(iv.Window, iv.Workers, iv.Tasks, iv.AtS, time.Now())
			return nil
		}); err != nil {
			return runner.Result{}, HInfo{}, err
		}
		return finishHorizontal(c, &mu, &res, &info, cpuUsed, workers, pr)
	}
	bin := c.WorkerBin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return runner.Result{}, HInfo{}, fmt.Errorf("live: %w", err)
		}
	}
	prov := &local.Provider{Bin: bin, Args: c.WorkerArgs, Env: c.WorkerEnv,
		Extra: []string{"-app", c.App.Name, "-report", c.Step.String(), "-millicores", strconv.Itoa(c.TaskMillicores)}}
	if c.WorkerBudget > 0 {
		prov.Extra = append(prov.Extra, BudgetFlag(c.WorkerBudgetProcess), strconv.Itoa(c.WorkerBudget))
	}
	if c.Log != io.Discard {
		prov.Output = c.Log
	}
	defer prov.Close()
	controller := "none"
	if c.NewPlacer != nil {
		controller = c.Name
	}
	pc := planner.Config{
		App: c.App, Seed: c.Seed, Trace: c.Trace, TraceStep: c.Step, RateMult: 1,
		Duration: loadEnds, Drain: max(2*c.Step, 2*time.Second),
		Workers: c.Workers, Provider: prov, Controller: controller, NewPlacer: c.NewPlacer, MaxWorkers: c.MaxWorkers,
		Control: c.Step, Allocate: hook, Log: c.Log, JoinTimeout: 60 * time.Second,
		ExecCPU: c.WorkerBudget > 0,
	}
	if c.WorkerBudgetProcess {
		pc.Miss = ProcessBudgetMiss
	}
	var err error
	if pl, err = planner.New(pc); err != nil {
		return runner.Result{}, HInfo{}, fmt.Errorf("live: %w", err)
	}
	pr, err = pl.Run(ctx, func(addr string) { prov.Planner = addr })
	prov.Close()
	if err != nil {
		return runner.Result{}, HInfo{}, fmt.Errorf("live: %w", err)
	}
	return finishHorizontal(c, &mu, &res, &info, cpuUsed, workers, pr)
}

// ProcessBudgetMiss is the planner's miss limit (beats of 200 ms) in runs
// whose workers are each held to a whole-process CPU budget: 50, ten
// seconds. A worker spends its beats out of its budget, and under it the
// Go runtime's concurrent mark phase takes seconds of wall time, during
// which the beat goroutine is not scheduled (worker.beatLoop). Measured on
// sd at 60 mc, 32,000 inputs/s with CLASP scaling one worker to four:
// gaps between beats of up to 5.8 s over nine runs, and at the earlier 5 s
// limit 0–2 failovers of working workers per run (1–7 at 200 mc on wc
// with the default 1 s). These runs compare placements, not failure
// detection, and a dead worker's stream ends at once (the planner fails
// it over without waiting for beats), so the limit only decides when a
// hung one is declared dead. Production defaults are longer still:
// Flink's heartbeat.timeout is 50 s, and a Kubernetes liveness probe
// fails a container after 3 × 10 s.
const ProcessBudgetMiss = 50

// finishHorizontal closes a horizontal run: migrations by interval, the
// run-level figures and the summary.
func finishHorizontal(c HConfig, mu *sync.Mutex, resp *runner.Result, infop *HInfo, cpuUsed, workers float64, pr planner.Result) (runner.Result, HInfo, error) {
	mu.Lock()
	defer mu.Unlock()
	res, info := resp, infop
	if len(res.Intervals) == 0 {
		return runner.Result{}, HInfo{}, errors.New("live: no control interval completed (did the workers report?)")
	}
	for _, m := range pr.Migrations {
		if k := int(m.AtS / c.Step.Seconds()); k >= 0 && k < len(res.Intervals) {
			res.Intervals[k].Replanned = true
		}
	}
	n := float64(len(res.Intervals))
	info.Inputs, info.Completed, info.Lost, info.Duplicated = pr.Inputs, pr.Completed, pr.Lost, pr.Duplicated
	info.Dropped, info.Unfinished = pr.Dropped, pr.Unfinished
	info.Delivered = 1
	if pr.Inputs > 0 {
		info.Delivered = float64(pr.Completed) / float64(pr.Inputs)
	}
	info.P50MS, info.P95MS = pr.P50MS, pr.P95MS
	info.MeanWorkers = workers / n
	info.MeanCPUUsedCores = cpuUsed / n
	info.Migrations = len(pr.Migrations)
	info.PlannerMSMax, info.WorkerPauseMSMax = pr.MigrationPlannerMS, pr.MigrationWorkerPauseMSMax
	info.MigrationLog = slices.Clone(pr.Migrations)
	info.Failovers = pr.Failures
	info.BeatGapMSP99, info.BeatGapMSMax = pr.BeatGapMSP99, pr.BeatGapMSMax
	for _, iv := range res.Intervals {
		info.WorkersPerStep = append(info.WorkersPerStep, int(iv.ActiveServers))
		info.OfferedPerStep = append(info.OfferedPerStep, round1(iv.Offered))
		info.ThroughputPerStep = append(info.ThroughputPerStep, round1(iv.Throughput))
		info.P95PerStep = append(info.P95PerStep, round1(iv.P95MS))
	}
	res.Summary = runner.Summarize(res.Intervals)
	res.TrajectorySHA256 = runner.TrajectoryHash(res.Intervals)
	return *res, *info, nil
}

// round1 rounds to one decimal (summary.json stays readable).
func round1(x float64) float64 { return math.Round(x*10) / 10 }

// BudgetFlag is the worker flag of a worker budget: -process-budget for
// the kernel's quota on the whole process, -budget for the in-process one
// over its tasks.
func BudgetFlag(process bool) string {
	if process {
		return "-process-budget"
	}
	return "-budget"
}

// IsHorizontal reports whether profile is a runtime application without a
// vertical scenario: a CLASP application (wc, sd, aa, pl, nwm, syn, …),
// run by RunHorizontal, not pred or etl, run by Run.
func IsHorizontal(profile string) bool {
	return !slices.Contains(env.Profiles(), profile) && slices.Contains(ops.AppNames(), profile)
}
