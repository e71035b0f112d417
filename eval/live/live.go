package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/runner"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
	"streamscale/serve/runtime/provider/local"
	"streamscale/traces"
)

// Config is one live run.
type Config struct {
	// Scenario is the edge scenario the controller was built for (its
	// application profile, servers, placement, CPU bounds and initial
	// allocation); its Workload is not replayed (Trace is).
	Scenario env.Config
	// App is the runtime application of the profile (ops.AppByName).
	App ops.App
	// Trace is replayed open-loop from its point 0, one point per Step,
	// at Trace.Rate (its multiplier included).
	Trace *traces.Trace
	// Step is the wall time of one trace point and of one control
	// interval (the time compression: the simulator's interval is 1 s).
	Step time.Duration
	// Intervals is the number of control intervals (trace points) run.
	Intervals int
	// Seed seeds the input source and is given to the controller's Reset.
	Seed uint64
	// Workers is the number of worker processes (default 1).
	Workers int
	// CPUScale is the live millicores given per scenario millicore
	// (default 1): a task allotted A scenario millicores gets
	// A·CPUScale/Workers millicores of CFS quota in every worker.
	CPUScale float64
	// ExtraMillicores is the live allocation, per worker, of operators
	// the scenario does not control (ETL's Sink); default 1000.
	ExtraMillicores int
	// Controller decides every interval; Name is its canonical spec.
	Controller agents.Controller
	Name       string
	// ActTimeout bounds one decision (default Step): a controller that
	// errs or takes longer leaves the allocation in force, and the
	// failure is counted.
	ActTimeout time.Duration
	// Worker processes: Bin (default this executable) is run with Args
	// (default ["worker"]), then -planner, -addr, -id and the worker
	// flags of RunWorker; Env is added to their environment.
	WorkerBin  string
	WorkerArgs []string
	WorkerEnv  []string
	// Log receives the planner's and the workers' events (nil: discarded).
	Log io.Writer
	// Planner, if set, is the control API (host:port) of a running planner
	// service (`serve planner -serve`) to attach to instead of starting a
	// planner and workers here; PlannerToken is its shared token. The
	// service must run App; Workers, the trace slice, Seed and Step are
	// sent with the replay request, so the run is the in-process one.
	Planner      string
	PlannerToken string
	// Tap, if set, receives every recorded interval's index and the
	// workers' reports it was measured from (calibration).
	Tap func(step int, tasks []planner.TaskObs)
	// Observe, if set, receives every observation the controller is asked
	// on, synchronously and before it is asked, with the index of the
	// recorded interval whose allocation the decision is for: 0 for the
	// initial state's, t+1 for the one built from interval t's reports
	// (the last is for an interval never run). It is called whether or not
	// the controller then answers in time, so interval t's observation is
	// there for every recorded interval t (eval simgap -obs).
	Observe func(step int, obs env.Observation)
	// Warmup is a number of intervals run before the recorded ones, at
	// every task's MaxCPU, with the slice's first trace point repeated:
	// nothing is recorded and the controller is not asked; then the
	// allocation becomes the controller's initial decision and interval
	// 0 starts. The simulator has no cold start, the runtime does: a
	// fresh worker spends 3–4× its steady CPU per event in its first
	// quarter-second (pred SenMLParse 8.5, then 3.4, 2.8–3.0, and 2.0–2.4
	// µs from the seventh interval at 3,000 inputs/s), which a rule
	// sizing on the measured utilization takes for load (the Kubernetes
	// HPA ignores a new pod's CPU samples for the same reason:
	// --horizontal-pod-autoscaler-cpu-initialization-period). Default 0.
	Warmup int
}

// Info is what a live run records beyond runner.Result.
type Info struct {
	StepS     float64 `json:"step_s"`
	Workers   int     `json:"workers"`
	CPUScale  float64 `json:"cpu_scale"`
	Inputs    uint64  `json:"inputs"`
	Completed uint64  `json:"completed"`
	// Dropped counts the inputs the runtime dropped (never delivered: a
	// defect or a failed job), Unfinished those still queued when the
	// drain ended (a starved run's backlog); Lost is Dropped (see
	// planner.Result).
	Dropped         uint64  `json:"dropped"`
	Unfinished      uint64  `json:"unfinished"`
	Lost            uint64  `json:"lost"`
	Duplicated      uint64  `json:"duplicated"`
	RunP95MS        float64 `json:"run_p95_ms"`
	ControlFailures int     `json:"control_failures"`
	// EmptyCatchUps counts the planner's catch-up rounds with an empty
	// window (emptyCatchUp), not recorded as intervals.
	EmptyCatchUps int `json:"empty_catch_up_rounds,omitempty"`
	// LastFailure is the last controller failure's message ("" without).
	LastFailure string `json:"last_failure,omitempty"`
	// MeanCPUUsedCores is the mean CPU the tasks used, cores (real).
	MeanCPUUsedCores float64 `json:"mean_cpu_used_cores"`
}

func (c *Config) fill() error {
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.CPUScale == 0 {
		c.CPUScale = 1
	}
	if c.ExtraMillicores == 0 {
		c.ExtraMillicores = 1000
	}
	if c.ActTimeout == 0 {
		c.ActTimeout = c.Step
	}
	if c.WorkerArgs == nil {
		c.WorkerArgs = []string{"worker"}
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case c.Trace == nil:
		return errors.New("live: no trace")
	case c.Controller == nil:
		return errors.New("live: no controller")
	case c.Step < 10*time.Millisecond:
		return fmt.Errorf("live: step %v, want ≥ 10ms", c.Step)
	case c.Intervals < 1:
		return fmt.Errorf("live: %d intervals, want ≥ 1", c.Intervals)
	case c.Workers < 1 || c.Workers > 16:
		return fmt.Errorf("live: %d workers, want 1..16", c.Workers)
	case !(c.CPUScale > 0) || math.IsInf(c.CPUScale, 0):
		return fmt.Errorf("live: CPU scale %v, want > 0", c.CPUScale)
	case c.Warmup < 0 || c.Warmup > 10_000:
		return fmt.Errorf("live: warm-up of %d intervals, want 0..10000", c.Warmup)
	case c.Warmup > 0 && len(c.Trace.Counts) == 0:
		return errors.New("live: a warm-up needs a trace with at least one point")
	}
	return nil
}

// liveMC is the per-worker CFS quota of a task allotted a scenario
// millicores.
func (c *Config) liveMC(a float64) int {
	return max(1, int(math.Round(a*c.CPUScale/float64(c.Workers))))
}

// Run runs the live evaluation: a planner in this process and Workers
// worker processes, the trace replayed open-loop, and every Step the
// observation built from the runtime's reports (Observer), the
// controller's action and the new allocation sent to the workers. The
// result reads like a simulated run's: one runner.Interval per control
// interval (p95 and mean of the inputs completed in it, corrected for
// coordinated omission; violated when p95 > SLO; total CPU the scenario
// millicores applied) and their runner.Summary. Reward terms are zero
// (the live run does not compute the simulator's reward); ReservedCPU is
// the total allocation and ActiveServers the scenario's servers hosting a
// task. Live runs are not reproducible (real time); Seed and the
// configuration are recorded.
func Run(ctx context.Context, c Config) (runner.Result, Info, error) {
	if err := c.fill(); err != nil {
		return runner.Result{}, Info{}, err
	}
	ob, err := NewObserver(c.Scenario, c.App)
	if err != nil {
		return runner.Result{}, Info{}, err
	}
	sc := ob.Scenario()
	if err := c.Controller.Reset(c.Seed); err != nil {
		return runner.Result{}, Info{}, fmt.Errorf("live: controller %s: reset: %w", c.Name, err)
	}
	n := len(sc.App.Tasks)
	alloc := make([]float64, n)
	for k := range alloc {
		alloc[k] = sc.InitialCPU
	}
	slo := sc.App.SLOMS
	res := runner.Result{
		Key:   runner.Key{Profile: sc.App.Name, Trace: c.Trace.Name, Scenario: "live", Seed: c.Seed, Controller: c.Name},
		SLOMS: slo, Placement: append([]int(nil), sc.Placement...),
	}
	for _, t := range sc.App.Tasks {
		res.Tasks = append(res.Tasks, t.Name)
	}
	info := Info{StepS: c.Step.Seconds(), Workers: c.Workers, CPUScale: c.CPUScale}
	stepS := c.Step.Seconds()
	active := map[int]bool{}
	for _, s := range sc.Placement {
		active[s] = true
	}

	ask := &asker{c: c.Controller}
	var (
		pl      *planner.Planner
		mu      sync.Mutex // guards res.Intervals and info while the hook runs
		cpuUsed float64
	)
	perWorker := func() []int {
		mcs := make([]int, len(c.App.Operators))
		for i := range mcs {
			mcs[i] = c.ExtraMillicores
		}
		for k, op := range ob.Ops() {
			mcs[op] = c.liveMC(alloc[k])
		}
		return mcs
	}
	// step records one interval from the window and the workers' reports,
	// asks the controller and returns the new per-worker allocation (nil:
	// unchanged); in process it runs as the planner's Allocator, attached
	// once per interval the service reports.
	// byWorker is the allocation in force for every worker that reported.
	byWorker := func(tasks []planner.TaskObs) map[uint32][]int {
		mcs := perWorker()
		out := map[uint32][]int{}
		for _, t := range tasks {
			out[t.Worker] = mcs
		}
		return out
	}
	warm, start, want := c.Warmup, []float64(nil), c.Intervals
	step := func(w planner.Window, tasks []planner.TaskObs) map[uint32][]int {
		mu.Lock()
		defer mu.Unlock()
		if warm > 0 {
			if warm--; warm > 0 {
				return nil
			}
			copy(alloc, start)
			return byWorker(tasks)
		}
		if len(res.Intervals) >= want {
			return nil // draining
		}
		if emptyCatchUp(w) {
			info.EmptyCatchUps++
			return nil
		}
		m := Measured{Tasks: tasks, Throughput: float64(len(w.LatencyMS)) / stepS}
		m.P95MS = p95(w.LatencyMS, w.OpenAgeMS)
		if len(w.LatencyMS) > 0 {
			sum := 0.0
			for _, x := range w.LatencyMS {
				sum += x
			}
			m.MeanMS = sum / float64(len(w.LatencyMS))
		}
		tot := ob.Totals(m)
		iv := runner.Interval{
			Step: int64(len(res.Intervals)), Offered: float64(w.Offered) / stepS, Throughput: m.Throughput,
			SinkEvents: float64(len(w.LatencyMS)), P95MS: m.P95MS, MeanMS: m.MeanMS, Violated: m.P95MS > slo,
			Applied: append([]float64(nil), alloc...), Queue: make([]float64, n), ActiveServers: int64(len(active)),
		}
		for k := range alloc {
			iv.TotalCPU += alloc[k]
			iv.Queue[k] = tot[k].Queue
		}
		iv.ReservedCPU = iv.TotalCPU
		for _, t := range tasks {
			cpuUsed += t.CPUCores
		}
		res.Intervals = append(res.Intervals, iv)
		if c.Tap != nil {
			c.Tap(int(iv.Step), tasks)
		}
		obs := ob.Observe(m, alloc)
		if c.Observe != nil {
			c.Observe(int(iv.Step)+1, obs)
		}
		a, err := ask.act(ctx, obs, c.ActTimeout)
		var next []float64
		if err == nil {
			next, err = ob.Apply(alloc, a)
		}
		if err != nil {
			info.ControlFailures++
			info.LastFailure = err.Error()
			fmt.Fprintf(c.Log, "live: interval %d: controller %s: %v; the allocation stays\n", iv.Step, c.Name, err)
			return nil
		}
		copy(alloc, next)
		return byWorker(tasks)
	}

	hook := func(_ float64, tasks []planner.TaskObs) map[uint32][]int { return step(pl.TakeWindow(), tasks) }

	// As after env.Reset, the controller first acts on the observation
	// of the initial state (nothing measured yet); the workers start with
	// that allocation.
	// The load has not started, so this first decision may take longer
	// (a policy endpoint's first request).
	obs0 := ob.Observe(Measured{}, alloc)
	if c.Observe != nil {
		c.Observe(0, obs0)
	}
	if a, err := ask.act(ctx, obs0, max(c.ActTimeout, 10*time.Second)); err != nil {
		info.ControlFailures++
		info.LastFailure = err.Error()
	} else if next, err := ob.Apply(alloc, a); err != nil {
		info.ControlFailures++
		info.LastFailure = err.Error()
	} else {
		copy(alloc, next)
	}
	if warm > 0 {
		start = append(start, alloc...)
		for k := range alloc {
			alloc[k] = sc.MaxCPU
		}
		c.Trace = warmTrace(c.Trace, warm)
		c.Intervals += warm // the planner's replay; the hook records want intervals after the warm-up
	}
	finish := func(pr planner.Result) (runner.Result, Info, error) {
		return finishVertical(&mu, &res, &info, &cpuUsed, pr)
	}
	initial := make([]string, len(c.App.Operators))
	for i, mc := range perWorker() {
		initial[i] = strconv.Itoa(mc)
	}

	var pr planner.Result
	if c.Planner != "" {
		mcs := perWorker()
		if pr, err = attach(ctx, c.attachment(planner.ModeVertical, mcs), func(iv planner.IntervalReport) map[uint32][]int {
			return step(iv.Window, iv.Tasks)
		}); err != nil {
			return runner.Result{}, Info{}, err
		}
		return finish(pr)
	}
	bin := c.WorkerBin
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return runner.Result{}, Info{}, fmt.Errorf("live: %w", err)
		}
	}
	prov := &local.Provider{Bin: bin, Args: c.WorkerArgs, Env: c.WorkerEnv,
		Extra: []string{"-app", c.App.Name, "-report", c.Step.String(), "-alloc", strings.Join(initial, ",")}}
	if c.Log != io.Discard {
		prov.Output = c.Log
	}
	defer prov.Close()
	pc := planner.Config{
		App: c.App, Seed: c.Seed, Trace: c.Trace, TraceStep: c.Step, RateMult: 1,
		Duration: time.Duration(c.Intervals) * c.Step, Drain: 2 * c.Step,
		Workers: c.Workers, Provider: prov, Control: c.Step, Allocate: hook, Log: c.Log,
		JoinTimeout: 60 * time.Second,
	}
	pl, err = planner.New(pc)
	if err != nil {
		return runner.Result{}, Info{}, fmt.Errorf("live: %w", err)
	}
	pr, err = pl.Run(ctx, func(addr string) { prov.Planner = addr })
	prov.Close()
	if err != nil {
		return runner.Result{}, Info{}, fmt.Errorf("live: %w", err)
	}
	return finish(pr)
}

// warmTrace is t with its first point repeated n more times in front.
func warmTrace(t *traces.Trace, n int) *traces.Trace {
	w := *t
	w.Counts = make([]float64, 0, n+len(t.Counts))
	for range n {
		w.Counts = append(w.Counts, t.Counts[0])
	}
	w.Counts = append(w.Counts, t.Counts...)
	return &w
}

// finishVertical closes a vertical run: the run-level figures and the
// summary (mu guards res and info against a late hook).
func finishVertical(mu *sync.Mutex, res *runner.Result, info *Info, cpuUsed *float64, pr planner.Result) (runner.Result, Info, error) {
	mu.Lock()
	defer mu.Unlock()
	if len(res.Intervals) == 0 {
		return runner.Result{}, Info{}, errors.New("live: no control interval completed (did the workers report?)")
	}
	info.Inputs, info.Completed, info.Lost, info.Duplicated, info.RunP95MS = pr.Inputs, pr.Completed, pr.Lost, pr.Duplicated, pr.P95MS
	info.Dropped, info.Unfinished = pr.Dropped, pr.Unfinished
	info.MeanCPUUsedCores = *cpuUsed / float64(len(res.Intervals))
	res.Summary = runner.Summarize(res.Intervals)
	res.TrajectorySHA256 = runner.TrajectoryHash(res.Intervals)
	return *res, *info, nil
}

// asker asks a controller with a timeout. The decision runs on its own
// goroutine; one that outlives the timeout is abandoned (its result
// dropped), and the controller is not asked again until it has returned,
// so it is never called concurrently.
type asker struct {
	c       agents.Controller
	pending chan decision // the abandoned decision, nil when none
}

type decision struct {
	a   env.Action
	err error
}

func (k *asker) act(ctx context.Context, obs env.Observation, timeout time.Duration) (env.Action, error) {
	if k.pending != nil {
		select {
		case <-k.pending:
			k.pending = nil
		default:
			return env.Action{}, errors.New("the previous decision is still running")
		}
	}
	obs = obs.Clone()
	ch := make(chan decision, 1)
	go func() {
		a, err := k.c.Act(obs)
		ch <- decision{a, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d := <-ch:
		return d.a, d.err
	case <-t.C:
		k.pending = ch
		return env.Action{}, fmt.Errorf("no decision within %v", timeout)
	case <-ctx.Done():
		k.pending = ch
		return env.Action{}, ctx.Err()
	}
}

// p95 is the interval's p95 end-to-end latency: the nearest-rank 95th
// percentile over the latencies of the inputs completed in the interval
// and the ages of the inputs still open at its end (lower bounds of their
// latencies), both ascending. An interval whose backlog completes nothing
// thus reports the backlog's age, not 0.
func p95(done, open []float64) float64 {
	all := make([]float64, 0, len(done)+len(open))
	i, j := 0, 0
	for i < len(done) || j < len(open) {
		if j == len(open) || (i < len(done) && done[i] <= open[j]) {
			all = append(all, done[i])
			i++
		} else {
			all = append(all, open[j])
			j++
		}
	}
	return quantile(all, 0.95)
}

// emptyCatchUp reports whether w is the window of a planner catch-up round
// (planner.Window.CatchUp) that holds nothing: no input offered, none
// completed, none open. It describes no interval of the load (what the
// load did there is in an earlier window, which spanned the boundaries a
// busy host's ticks missed), so recording it would add an interval with
// p95 0 that met the SLO.
func emptyCatchUp(w planner.Window) bool {
	return w.CatchUp && w.Offered == 0 && len(w.LatencyMS) == 0 && len(w.OpenAgeMS) == 0
}

// quantile is the nearest-rank q-quantile of ascending xs, the smallest
// x_i with at least a fraction q of the values ≤ it: x_{⌈q·n⌉−1}
// (0-based; x_0 for q = 0), and 0 for no values. gonum's stat.Empirical
// quantile is this definition (the first i with i+1 ≥ q·n).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stat.Quantile(q, stat.Empirical, xs, nil)
}
