package calibrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"streamscale/clasp"
	"streamscale/eval/live"
	"streamscale/internal/costfile"
	"streamscale/rng"
	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
	"streamscale/serve/runtime/provider/local"
)

// CostProbe configures ProbeCosts: short live runs of the runtime's chain
// application (ten no-op operators, runtime.Apps("chain")) in controlled
// layouts, and one saturated run of BudgetApp, every worker process's CPU
// time read from its process CPU clock.
type CostProbe struct {
	// Rate is the chain runs' input rate, inputs/s (the gamma layouts also
	// run at Rate/2). Default 4000.
	Rate float64
	// Load is each run's load, and the window measured (the planner
	// observes from the first full second of load on, so at least 1.5 s);
	// Report the workers' report and the control interval. Defaults 3 s,
	// 250 ms.
	Load   time.Duration
	Report time.Duration
	// TaskMillicores is every task's CFS quota in every worker, millicores
	// (default 1000, eval live's -task-mc): W is the budget at this quota.
	TaskMillicores int
	// WorkerBudget is every worker's CPU budget shared by its tasks
	// (live.HConfig.WorkerBudget, eval live's -worker-budget; 0: none). With a
	// budget τ̄ is CPU time per execution, as in live.HConfig's runs, and W the
	// CPU a saturated worker gets: the budget.
	WorkerBudget int
	// WorkerBudgetProcess makes WorkerBudget the kernel's quota on the
	// whole worker process (live.HConfig.WorkerBudgetProcess).
	WorkerBudgetProcess bool
	// BudgetApp is saturated on one worker at BudgetRate inputs/s for W
	// (default syn, ten 400 µs operators, at 1500 inputs/s).
	BudgetApp  ops.App
	BudgetRate float64
	// Fit says when a term is accepted (nil: DefaultCostFitConfig).
	Fit  *CostFitConfig
	Seed uint64
	// Worker processes as in live.Config.
	WorkerBin  string
	WorkerArgs []string
	Log        io.Writer

	execUS []float64 // the chain's operators, µs (ProbeCosts)
}

// chainInputs is the inputs of the chain timed in process.
const chainInputs = 20000

func (p *CostProbe) fill() error {
	if p.Rate == 0 {
		p.Rate = 4000
	}
	if p.Load == 0 {
		p.Load = 3 * time.Second
	}
	if p.Report == 0 {
		p.Report = 250 * time.Millisecond
	}
	if p.TaskMillicores == 0 {
		p.TaskMillicores = 1000
	}
	if len(p.BudgetApp.Operators) == 0 {
		p.BudgetApp = runtime.Chain("syn", 10, 400*time.Microsecond)
	}
	if p.BudgetRate == 0 {
		p.BudgetRate = 1500
	}
	if p.Fit == nil {
		d := DefaultCostFitConfig()
		p.Fit = &d
	}
	if p.Log == nil {
		p.Log = io.Discard
	}
	switch {
	case !(p.Rate >= 10 && p.Rate <= 1e6) || !(p.BudgetRate > 0 && p.BudgetRate <= 1e6):
		return fmt.Errorf("calibrate: cost probe rate %v and budget rate %v inputs/s, want 10..1e6 and (0, 1e6]", p.Rate, p.BudgetRate)
	case p.Report < 10*time.Millisecond || p.Load < 1500*time.Millisecond || p.Load < time.Second+2*p.Report:
		return fmt.Errorf("calibrate: cost probe load %v, report %v: want report ≥ 10ms and a load of at least 1.5 s and 1 s + 2 reports (the planner observes from the first full second on)", p.Load, p.Report)
	case p.TaskMillicores < 1 || p.TaskMillicores > 64000:
		return fmt.Errorf("calibrate: cost probe task millicores %d, want 1..64000", p.TaskMillicores)
	case p.WorkerBudget < 0 || p.WorkerBudget > 64000:
		return fmt.Errorf("calibrate: cost probe worker budget %d millicores, want 0 (none) or 1..64000", p.WorkerBudget)
	case p.WorkerBudgetProcess && p.WorkerBudget == 0:
		return fmt.Errorf("calibrate: cost probe process budget needs a worker budget > 0")
	case !(p.Fit.MinR2 >= 0 && p.Fit.MinR2 <= 1):
		return fmt.Errorf("calibrate: cost probe min R² %v, want [0, 1]", p.Fit.MinR2)
	case p.BudgetApp.NewSource == nil:
		return errors.New("calibrate: cost probe budget application has no source")
	}
	return nil
}

// CostProbeResult is ProbeCosts' result, calibration.json's cost_probe.
type CostProbeResult struct {
	// Rate, LoadS, ReportS, TaskMillicores, BudgetApp, BudgetRate, MinR2
	// and ZeroUnresolved are the probe's configuration.
	Rate           float64 `json:"rate"`
	LoadS          float64 `json:"load_s"`
	ReportS        float64 `json:"report_s"`
	TaskMillicores int     `json:"task_millicores"`
	WorkerBudget   int     `json:"worker_budget_millicores,omitempty"`
	BudgetProcess  bool    `json:"worker_budget_process,omitempty"`
	BudgetApp      string  `json:"budget_app"`
	BudgetRate     float64 `json:"budget_rate"`
	MinR2          float64 `json:"min_r2"`
	ZeroUnresolved bool    `json:"zero_unresolved,omitempty"`
	// Terms are α, β, γ and W with their fits; Model is the cost model,
	// set only when every term was accepted (Refused says otherwise).
	Terms   []CostTerm      `json:"terms"`
	Model   *costfile.Model `json:"model,omitempty"`
	Refused string          `json:"refused,omitempty"`
	// ChainExecUS is the chain's operators' mean execution time, µs
	// (ServiceTimes over ChainInputs inputs), subtracted as operator
	// execution.
	ChainExecUS []float64 `json:"chain_exec_us"`
	ChainInputs int       `json:"chain_inputs"`
	// Order is the runs' order (layout@rate), shuffled with Seed.
	Order []string `json:"order"`
	// Points are every run's per-worker measurements, in run order.
	Points []CostPoint `json:"points"`
	// WallS is the probe's wall time, s.
	WallS float64 `json:"wall_s"`
}

// costLayout is one probe run: shares[i][o] worker i's share of operator
// o.
type costLayout struct {
	name, term string
	app        ops.App
	rate       float64
	shares     [][]float64
}

// costLayouts returns the probe's runs in order, for a chain of n
// operators (n ≥ 4) at rate r and the budget application b at rate br:
//
// Every chain layout's last worker owns nothing: the reference, whose CPU
// is a worker's idle cost of the moment (FitCostModel subtracts it).
//
//   - alpha-beta at r: split-K for K in {1, 3, 5, 7, 9} scaled to n
//     (operators before K on worker 0, the rest on worker 1: one cut
//     edge), then cut-M for M in {3, 5, n−1} (operator o on worker
//     ⌊o(M+1)/n⌋ mod 2: M cut edges);
//   - gamma at r/2 and r: dests-D for D in {1, 2, 3} (the first half on
//     worker 0, the second half split evenly over workers 1…D, so worker
//     0 sends the same remote rate to D destinations);
//   - budget: b on one worker at br.
func costLayouts(chain ops.App, r float64, b ops.App, br float64) []costLayout {
	n := len(chain.Operators)
	grid := func(w int) [][]float64 {
		s := make([][]float64, w)
		for i := range s {
			s[i] = make([]float64, n)
		}
		return s
	}
	var out []costLayout
	seen := map[int]bool{} // only indexed
	for _, k := range []int{1, 3, 5, 7, 9} {
		k = max(1, min(n-1, k*n/10))
		if seen[k] {
			continue
		}
		seen[k] = true
		s := grid(3)
		for o := range n {
			s[btoi(o >= k)][o] = 1
		}
		out = append(out, costLayout{name: "split-" + strconv.Itoa(k), term: "alpha-beta", app: chain, rate: r, shares: s})
	}
	for _, m := range []int{3, 5, n - 1} {
		if m < 2 || m > n-1 {
			continue
		}
		s := grid(3)
		for o := range n {
			s[(o*(m+1)/n)%2][o] = 1
		}
		out = append(out, costLayout{name: "cut-" + strconv.Itoa(m), term: "alpha-beta", app: chain, rate: r, shares: s})
	}
	for _, rate := range []float64{r / 2, r} {
		for d := 1; d <= 3; d++ {
			s := grid(d + 2)
			for o := range n {
				if o < n/2 {
					s[0][o] = 1
					continue
				}
				for j := 1; j <= d; j++ {
					s[j][o] = 1 / float64(d)
				}
			}
			out = append(out, costLayout{name: "dests-" + strconv.Itoa(d), term: "gamma", app: chain, rate: rate, shares: s})
		}
	}
	s := [][]float64{make([]float64, len(b.Operators))}
	for o := range s[0] {
		s[0][o] = 1
	}
	return append(out, costLayout{name: "budget", term: "budget", app: b, rate: br, shares: s})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ProbeCosts measures CLASP's cost model of chained requests (Eq. 1) on
// the live runtime by microbenchmarks, as the CLASP paper did (§4.1): it
// runs costLayouts in an order shuffled with Seed, each a fresh planner with its worker
// processes, the placement fixed by the layout's shares, reads every
// worker process's CPU clock (CLOCK_PROCESS_CPUTIME of the child, ns) at
// every control interval, and turns the window after the warm-up into one
// CostPoint per worker: CPU µs/s, the time inside the operators (Σ N·τ̄
// from the workers' reports), R^l, R^r and δ. FitCostModel then
// identifies α, β, γ and W term by term. The layouts and rates are fixed
// (the input source is seeded by Seed); the CPU times are the machine's.
// It needs Linux (/proc and the process CPU clocks of the children).
func ProbeCosts(ctx context.Context, p CostProbe) (CostProbeResult, error) {
	if err := p.fill(); err != nil {
		return CostProbeResult{}, err
	}
	chain, err := runtime.Apps("chain")
	if err != nil {
		return CostProbeResult{}, fmt.Errorf("calibrate: %w", err)
	}
	bin := p.WorkerBin
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return CostProbeResult{}, fmt.Errorf("calibrate: %w", err)
		}
	}
	start := time.Now()
	res := CostProbeResult{Rate: p.Rate, LoadS: p.Load.Seconds(), ReportS: p.Report.Seconds(), TaskMillicores: p.TaskMillicores, WorkerBudget: p.WorkerBudget, BudgetProcess: p.WorkerBudgetProcess,
		BudgetApp: p.BudgetApp.Name, BudgetRate: p.BudgetRate, MinR2: p.Fit.MinR2, ZeroUnresolved: p.Fit.ZeroUnresolved, ChainInputs: chainInputs}
	svc, err := ServiceTimes(chain, p.Seed, chainInputs)
	if err != nil {
		return CostProbeResult{}, err
	}
	for _, d := range svc {
		res.ChainExecUS = append(res.ChainExecUS, d.MeanUS)
	}
	p.execUS = res.ChainExecUS
	layouts := costLayouts(chain, p.Rate, p.BudgetApp, p.BudgetRate)
	// A seeded order: the host's load drifts over the probe, and runs in
	// the order of their x would turn the drift into a slope.
	rng.New(p.Seed, rng.CalibrateLayouts).Shuffle(len(layouts), func(i, j int) { layouts[i], layouts[j] = layouts[j], layouts[i] })
	for _, l := range layouts {
		res.Order = append(res.Order, fmt.Sprintf("%s@%g", l.name, l.rate))
	}
	for _, l := range layouts {
		pts, err := p.run(ctx, bin, l)
		if err != nil && ctx.Err() == nil { // once more: a loaded host can starve a run
			fmt.Fprintf(p.Log, "calibrate: cost probe %s at %g inputs/s: %v; running it again\n", l.name, l.rate, err)
			pts, err = p.run(ctx, bin, l)
		}
		if err != nil {
			return CostProbeResult{}, fmt.Errorf("calibrate: cost probe %s at %g inputs/s: %w", l.name, l.rate, err)
		}
		fmt.Fprintf(p.Log, "calibrate: cost probe %s at %g inputs/s: %d workers measured\n", l.name, l.rate, len(pts))
		res.Points = append(res.Points, pts...)
	}
	model, terms, err := FitCostModel(res.Points, *p.Fit)
	res.Terms = terms
	switch {
	case errors.Is(err, ErrCostTerm):
		res.Refused = err.Error()
	case err != nil:
		return CostProbeResult{}, err
	default:
		m := costfile.FromClasp(model)
		res.Model = &m
	}
	res.WallS = time.Since(start).Seconds()
	return res, nil
}

// run runs one layout and returns one point per worker, in worker-ID
// order.
func (p *CostProbe) run(ctx context.Context, bin string, l costLayout) ([]CostPoint, error) {
	rec := &cpuRecorder{pids: map[int]int{}, self: os.Getpid(), workers: len(l.shares)}
	prov := &local.Provider{Bin: bin, Args: p.WorkerArgs, Extra: []string{"-app", l.app.Name, "-report", p.Report.String(), "-millicores", strconv.Itoa(p.TaskMillicores)}}
	if p.WorkerBudget > 0 {
		prov.Extra = append(prov.Extra, live.BudgetFlag(p.WorkerBudgetProcess), strconv.Itoa(p.WorkerBudget))
	}
	defer prov.Close()
	pc := planner.Config{
		App: l.app, Seed: p.Seed, Rate: l.rate, Duration: p.Load, Drain: p.Report,
		Workers: len(l.shares), Provider: prov, Control: p.Report, Shares: l.shares, Log: p.Log,
		Controller: "probe", NewPlacer: func() (clasp.Planner, error) { rec.begin(); return rec, nil }, MaxWorkers: len(l.shares),
		ExecCPU:     p.WorkerBudget > 0, // τ̄ as live.HConfig's runs observe it
		JoinTimeout: 60 * time.Second,
		// A starved worker must not be failed over (the layout would
		// change under the measurement).
		Miss: live.ProcessBudgetMiss,
	}
	pl, err := planner.New(pc)
	if err != nil {
		return nil, err
	}
	pr, err := pl.Run(ctx, func(addr string) { prov.Planner = addr })
	switch {
	case err != nil:
		return nil, err
	case pr.Failures > 0:
		return nil, fmt.Errorf("%d worker(s) failed over during the run: the layout changed", pr.Failures)
	case rec.err != nil:
		return nil, rec.err
	}
	return rec.points(l, p.Load.Seconds(), p.execUS)
}

// costTick is one control interval as the probe saw it: the workers'
// reports and their processes' CPU time.
type costTick struct {
	now  float64
	wall time.Time
	ws   []tickWorker
	pq   float64 // planner queue
	thr  float64 // inputs completed per second (the planner's last second)
}

type tickWorker struct {
	id                              int
	exec, execUS, local, remote, dq float64 // Σ N (1/s), Σ N·τ̄ (µs/s), R^l, R^r, δ
	queue                           float64
	cpuNS                           int64 // -1: unknown
	// reportS is the interval of the report the rates come from, s, and
	// repeated whether an earlier tick already carried that report
	// (clasp.WorkerObs): the rates are averaged over reports, each once,
	// weighted by its interval.
	reportS  float64
	repeated bool
}

// cpuRecorder is the probe's placement controller: it never changes the
// placement and records every observation with the worker processes' CPU
// clocks. Plan runs on the planner's control goroutine only.
type cpuRecorder struct {
	self    int
	workers int
	pids    map[int]int // worker ID → process ID; only indexed
	start   costTick    // the workers' CPU when the load starts
	ticks   []costTick
	err     error
}

// begin reads every worker's CPU clock as the load starts (the planner
// builds its placement controller then): the window's start.
func (r *cpuRecorder) begin() {
	r.start = costTick{wall: time.Now()}
	for id := range r.workers {
		ns, err := r.cpu(id)
		if err != nil && r.err == nil {
			r.err = err
		}
		r.start.ws = append(r.start.ws, tickWorker{id: id, cpuNS: ns})
	}
}

func (r *cpuRecorder) Name() string { return "probe" }
func (r *cpuRecorder) Reset()       {}

func (r *cpuRecorder) Plan(now float64, ob clasp.Observation) (clasp.Plan, error) {
	if len(ob.Workers) == 0 { // the initial placement's call: nothing placed
		return clasp.Plan{Planner: "probe", Time: now, Reason: "probe"}, nil
	}
	t := costTick{now: now, wall: time.Now(), pq: ob.PlannerQueue, thr: ob.Throughput}
	for _, w := range ob.Workers {
		tw := tickWorker{id: w.ID, local: w.LocalRate, remote: w.RemoteRate, dq: w.RemoteDests, queue: w.Queue, cpuNS: -1, reportS: w.ReportS, repeated: w.Repeated}
		for o, n := range w.Exec {
			tw.exec += n
			if o < len(w.ExecUS) {
				tw.execUS += n * w.ExecUS[o]
			}
		}
		t.ws = append(t.ws, tw)
	}
	for i := range t.ws {
		ns, err := r.cpu(t.ws[i].id)
		if err != nil && r.err == nil {
			r.err = err
		}
		t.ws[i].cpuNS = ns
	}
	r.ticks = append(r.ticks, t)
	return clasp.Plan{Planner: "probe", Time: now, Reason: "probe"}, nil
}

// cpu reads worker id's process CPU clock, ns, finding its process among
// this process's children (by the -id flag the provider passes) when not
// yet known.
func (r *cpuRecorder) cpu(id int) (int64, error) {
	pid, ok := r.pids[id]
	if !ok {
		if err := r.scan(); err != nil {
			return -1, err
		}
		if pid, ok = r.pids[id]; !ok {
			return -1, fmt.Errorf("no child process of %d runs worker %d", r.self, id)
		}
	}
	return ProcessCPU(pid)
}

// scan maps the worker IDs of this process's children to their PIDs.
func (r *cpuRecorder) scan() error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("reading worker CPU needs /proc: %w", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || parentOf(stat) != r.self {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if id, ok := workerID(cmd); ok {
			r.pids[id] = pid
		}
	}
	return nil
}

// parentOf returns the parent PID field of a /proc/PID/stat line (-1 when
// malformed): the fourth field, after the command in parentheses.
func parentOf(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 2 {
		return -1
	}
	p, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return p
}

// workerID returns the value of the -id flag of a NUL-separated command
// line.
func workerID(cmdline []byte) (int, bool) {
	args := bytes.Split(cmdline, []byte{0})
	for i := 0; i+1 < len(args); i++ {
		if string(args[i]) == "-id" {
			id, err := strconv.Atoi(string(args[i+1]))
			return id, err == nil && id >= 0
		}
	}
	return 0, false
}

// ProcessCPU returns the CPU time process pid has used, ns: its process
// CPU clock (clock_getcpuclockid: CPUCLOCK_SCHED of the process, the
// scheduler's exact sum over its threads).
func ProcessCPU(pid int) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(int32((^pid)<<3|2), &ts); err != nil {
		return -1, fmt.Errorf("process CPU clock of %d: %w", pid, err)
	}
	return ts.Nano(), nil
}

// points turns one run into one CostPoint per worker. The window is from
// the load's start (begin) to the last control interval within the load
// (loadS); the CPU rate is each worker process's CPU clock difference over
// the wall time between them. The request rates are the layout's (the
// chain at its input rate: nominalRates), the time inside the operators
// is their executions times execUS (the chain's operators timed in
// process); Throughput, the saturation counts and the budget run's
// saturated intervals come from the workers' reports.
func (r *cpuRecorder) points(l costLayout, loadS float64, execUS []float64) ([]CostPoint, error) {
	last := -1
	for i, t := range r.ticks {
		if t.now <= loadS+1e-9 {
			last = i
		}
	}
	if last < 0 {
		var at []string
		for _, t := range r.ticks {
			at = append(at, strconv.FormatFloat(t.now, 'f', 2, 64))
		}
		return nil, fmt.Errorf("no control interval observed within the %g s load (at %v s)", loadS, at)
	}
	t0, t1 := r.start, r.ticks[last]
	span := t1.wall.Sub(t0.wall).Seconds()
	find := func(t costTick, id int) (tickWorker, bool) {
		for _, w := range t.ws {
			if w.id == id {
				return w, true
			}
		}
		return tickWorker{}, false
	}
	nom := nominalRates(l, execUS)
	var out []CostPoint
	for id := range r.workers {
		w0, ok0 := find(t0, id)
		w1, ok1 := find(t1, id)
		if !ok0 || !ok1 || w0.cpuNS < 0 || w1.cpuNS < 0 {
			return nil, fmt.Errorf("worker %d has no CPU reading at the window's ends", id)
		}
		pt := nom[id]
		pt.Worker = id
		pt.CPUUS = float64(w1.cpuNS-w0.cpuNS) / 1e3 / span
		pt.WindowS = span
		var execW, execS float64 // Σ execUS·reportS and Σ reportS over the reports
		for _, t := range r.ticks[:last+1] {
			w, ok := find(t, id)
			if !ok {
				continue
			}
			pt.Throughput += t.thr / float64(last+1)
			if w.repeated {
				// A late report left the previous one in force: it was
				// counted at an earlier tick. (Counting it at every tick
				// weighted the report before a stall by the stall.)
				continue
			}
			if l.term == "budget" { // measured: the budget run's operators are not the chain's
				iv := w.reportS
				if !(iv > 0) {
					iv = 1
				}
				execW += w.execUS * iv
				execS += iv
			}
			pt.Intervals++
			if w.exec > 0 && (w.queue+t.pq)/w.exec > CostSaturationS {
				pt.Saturated++
				if l.term == "budget" {
					pt.Sat = append(pt.Sat, SatInterval{ExecUS: w.execUS, LocalRate: w.local, RemoteRate: w.remote, Dests: w.dq})
				}
			}
		}
		if execS > 0 {
			pt.ExecUS = execW / execS
		}
		out = append(out, pt)
	}
	return out, nil
}

// nominalRates is every worker's Eq. 1 drivers in layout l at its input
// rate, the routing the runtime does: an input's key stays with it along
// the chain, key group g of operator o is owned by the workers with a
// positive share in order, each an even run of the groups (the planner's
// largest-remainder split of equal shares), and a request is local when
// the same worker owns g at both ends of its edge. ExecUS is Σ_o
// executions·execUS[o] (execUS nil: 0). A worker owning nothing is the
// reference. The budget layout gets no rates (its are measured).
func nominalRates(l costLayout, execUS []float64) []CostPoint {
	n := len(l.shares)
	out := make([]CostPoint, n)
	for i := range out {
		out[i] = CostPoint{Layout: l.name, Term: l.term, Rate: l.rate}
	}
	if l.term == "budget" {
		return out
	}
	nOps := len(l.app.Operators)
	owner := make([][ops.KeyGroups]int, nOps)
	for o := range nOps {
		var ws []int
		for w := range n {
			if l.shares[w][o] > 0 {
				ws = append(ws, w)
			}
		}
		for g := range ops.KeyGroups {
			owner[o][g] = ws[g*len(ws)/ops.KeyGroups]
		}
	}
	per := l.rate / ops.KeyGroups
	dest := make([][]bool, n)
	for w := range dest {
		dest[w] = make([]bool, n)
	}
	for o := range nOps {
		for g := range ops.KeyGroups {
			if execUS != nil && o < len(execUS) {
				out[owner[o][g]].ExecUS += per * execUS[o]
			}
		}
	}
	for _, e := range l.app.Edges {
		for g := range ops.KeyGroups {
			from, to := owner[e[0]][g], owner[e[1]][g]
			if from == to {
				out[from].LocalRate += per
			} else {
				out[from].RemoteRate += per
				dest[from][to] = true
			}
		}
	}
	for w := range out {
		for _, d := range dest[w] {
			if d {
				out[w].Dests++
			}
		}
		out[w].Reference = true
		for _, sh := range l.shares[w] {
			if sh > 0 {
				out[w].Reference = false
			}
		}
	}
	return out
}
