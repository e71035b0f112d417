package claspexp

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"streamscale/agents/horizontal"
	"streamscale/clasp"
	"streamscale/env"
)

// Trace is a workload given point by point, events/s per step.
type Trace []float64

// Len implements env.Workload.
func (t Trace) Len() int { return len(t) }

// Rate implements env.Workload.
func (t Trace) Rate(i int) float64 { return t[i] }

// Method is a named planner constructor.
type Method struct {
	Name string
	New  func() (clasp.Planner, error)
}

// Methods returns every horizontal planner of the closed-loop experiments,
// each with at most maxWorkers workers: CLASP, FaaSFlow, Zhang24, DS2, the
// -SP variants (FaaSFlow's and Zhang24's worker counts with CLASP's
// placement), HPA (every baseline behind CLASP's triggers), clasp-paper: CLASP with the paper's projection
// s = λ_p/Λ alone (Config.Propagate and DrainS off), the ablation of our two
// additions, and clasp-h90: CLASP packing to 90% of W̄ (Config.Headroom
// 0.9) instead of the paper's L_w ≤ W̄.
func Methods(maxWorkers int) []Method {
	var ms []Method
	for _, b := range Baselines(maxWorkers) {
		ms = append(ms, Method{b.Name, b.New})
	}
	c := clasp.DefaultConfig()
	c.MaxWorkers = maxWorkers
	ff := clasp.DefaultFaaSFlowConfig()
	ff.MaxWorkers = maxWorkers
	zc := clasp.DefaultZhang24Config()
	zc.MaxWorkers = maxWorkers
	hc := clasp.DefaultHPAConfig()
	hc.MaxWorkers = maxWorkers
	return append(ms,
		Method{"faasflow-sp", func() (clasp.Planner, error) { return clasp.NewFaaSFlowSP(c, ff) }},
		Method{"zhang24-sp", func() (clasp.Planner, error) { return clasp.NewZhang24SP(c, zc) }},
		Method{"hpa", func() (clasp.Planner, error) { return gated(clasp.NewHPA(hc)) }},
		Method{"clasp-paper", func() (clasp.Planner, error) {
			cp := c
			cp.Propagate, cp.DrainS = false, 0
			return clasp.NewNamed(cp, "clasp-paper")
		}},
		Method{"clasp-h90", func() (clasp.Planner, error) {
			ch := c
			ch.Headroom = 0.9
			return clasp.NewNamed(ch, "clasp-h90")
		}},
	)
}

// closedLoop runs method's planner on app over trace on servers workers
// (every task starts on worker 0) and returns the step records and the
// controller.
func closedLoop(m Method, app clasp.App, servers int, trace Trace) ([]StepRecord, *horizontal.Adapter, error) {
	cfg, err := ClusterConfig(app, servers, 0, len(trace), nil)
	if err != nil {
		return nil, nil, err
	}
	cfg.Workload = trace
	p, err := m.New()
	if err != nil {
		return nil, nil, err
	}
	ctrl, err := horizontal.NewAdapter(p, app, servers, horizontal.AdapterConfig{BandwidthBytes: BandwidthBytes})
	if err != nil {
		return nil, nil, err
	}
	recs, err := run(cfg, ctrl, 1, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("claspexp: %s on %s: %w", m.Name, app.Name, err)
	}
	return recs, ctrl, nil
}

// TransitionRow is one method's worker count after one rate transition.
type TransitionRow struct {
	App    string  `json:"app"`
	Method string  `json:"method"`
	From   float64 `json:"from_rate"` // events/s
	To     float64 `json:"to_rate"`   // events/s
	// Needed is the observed optimal worker count (OOWC) of To: the
	// smallest n whose CLASP placement sustains it in the simulator
	// (maxRate[n−1] ≥ To), or len(maxRate)+1 if none does.
	Needed int `json:"needed"`
	// Workers is the method's worker count at the end of the run.
	Workers int `json:"workers"`
}

// TransitionOptions configures WorkerTransitions.
type TransitionOptions struct {
	// Fractions are the rates, as fractions of the largest sustained
	// rate (maxRate's last entry); every ordered pair of distinct
	// fractions is a transition.
	Fractions []float64
	// Warm is the number of steps at the source rate; After the number at
	// the target rate before the worker count is read.
	Warm, After int
}

// DefaultTransitionOptions: 10%, 20%, …, 100% of the 10-worker maximum
// (90 transitions), 12 steps at the source, 5 at the target.
func DefaultTransitionOptions() TransitionOptions {
	return TransitionOptions{Fractions: []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}, Warm: 12, After: 5}
}

// WorkerTransitions measures worker-count prediction (paper §6, experiment
// 5): for every source→target transition between the option's rates, each
// method runs closed loop on len(maxRate) workers at the source rate (so it
// observes a running deployment), the input then steps to the target, and
// the worker count it holds After steps later is compared with the OOWC of
// the target. maxRate[n−1] is the sustained rate of CLASP's placement on n
// workers (Scaling). Runs are independent and run concurrently; results
// come back in (method, source, target) order.
func WorkerTransitions(app clasp.App, maxRate []float64, methods []Method, o TransitionOptions) ([]TransitionRow, error) {
	if len(maxRate) == 0 || len(o.Fractions) < 2 || o.Warm < 1 || o.After < 1 {
		return nil, fmt.Errorf("claspexp: transitions need sustained rates, ≥ 2 fractions and warm, after ≥ 1")
	}
	top := maxRate[len(maxRate)-1]
	needed := func(r float64) int {
		for n, m := range maxRate {
			if m >= r*(1-1e-9) {
				return n + 1
			}
		}
		return len(maxRate) + 1
	}
	var rows []TransitionRow
	for _, m := range methods {
		for _, a := range o.Fractions {
			for _, b := range o.Fractions {
				if a != b {
					rows = append(rows, TransitionRow{App: app.Name, Method: m.Name, From: a * top, To: b * top, Needed: needed(b * top)})
				}
			}
		}
	}
	byName := map[string]Method{}
	for _, m := range methods {
		byName[m.Name] = m
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range rows {
		g.Go(func() error {
			row := &rows[i]
			trace := make(Trace, 0, o.Warm+o.After)
			for range o.Warm {
				trace = append(trace, row.From)
			}
			for range o.After {
				trace = append(trace, row.To)
			}
			_, ctrl, err := closedLoop(byName[row.Method], app, len(maxRate), trace)
			if err != nil {
				return err
			}
			row.Workers = ctrl.Workers()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rows, nil
}

// MeanAbsWorkerError is the mean |Workers − Needed| per method over rows,
// in workers.
func MeanAbsWorkerError(rows []TransitionRow) map[string]float64 {
	sum, cnt := map[string]float64{}, map[string]int{}
	for _, r := range rows {
		sum[r.Method] += math.Abs(float64(r.Workers - r.Needed))
		cnt[r.Method]++
	}
	for m := range sum {
		sum[m] /= float64(cnt[m])
	}
	return sum
}

// ModeRow is one method's closed-loop run in one load mode (experiment 6).
type ModeRow struct {
	App    string `json:"app"`
	Mode   string `json:"mode"` // "burst" or "gradual"
	Method string `json:"method"`
	// Offered and Delivered are the totals over the run, events.
	Offered   float64 `json:"offered"`
	Delivered float64 `json:"delivered"`
	// ThroughputRatio is Delivered/Offered.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// MedianMeanMS is the median over steps of the per-step mean
	// end-to-end latency; P95P95MS the 95th percentile over steps of the
	// per-step p95 (the simulator reports a mean and a p95 per step).
	MedianMeanMS float64 `json:"median_latency_ms"`
	P95P95MS     float64 `json:"p95_latency_ms"`
	// MeanWorkers and MaxWorkers are the active workers over the steps.
	MeanWorkers float64 `json:"mean_workers"`
	MaxWorkers  int     `json:"max_workers"`
	// Plans counts the changed plans applied; Infeasible the steps on which
	// the demand exceeded the cluster (the plan was kept).
	Plans      int   `json:"plans"`
	Infeasible int   `json:"infeasible"`
	Workers    []int `json:"workers_per_step"`
	// P95MS is the per-step p95, ms.
	P95MS []float64 `json:"p95_ms_per_step"`
	// Offered rate per step, events/s.
	Rates []float64 `json:"rates_per_step"`
}

// ModeTraces returns the two load modes of paper §5.6 as rate traces
// relative to top (the 10-worker sustained rate): burst holds 25% for 20 s,
// jumps to 75% for 20 s and drops back for 20 s; gradual ramps linearly
// from 15% to 85% over 45 s and back down over 45 s.
func ModeTraces(top float64) map[string]Trace {
	var burst, gradual Trace
	for t := range 60 {
		f := 0.25
		if t >= 20 && t < 40 {
			f = 0.75
		}
		burst = append(burst, f*top)
	}
	for t := range 90 {
		x := float64(t) / 45
		if t >= 45 {
			x = float64(90-t) / 45
		}
		gradual = append(gradual, (0.15+0.7*x)*top)
	}
	return map[string]Trace{"burst": burst, "gradual": gradual}
}

// Modes runs every method closed loop on app over both load modes, on
// servers workers, concurrently; rows come back in (mode, method) order.
func Modes(app clasp.App, top float64, servers int, methods []Method) ([]ModeRow, error) {
	traces := ModeTraces(top)
	var rows []ModeRow
	for _, mode := range []string{"burst", "gradual"} {
		for _, m := range methods {
			rows = append(rows, ModeRow{App: app.Name, Mode: mode, Method: m.Name})
		}
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range rows {
		g.Go(func() error {
			row := &rows[i]
			m := methods[i%len(methods)]
			recs, ctrl, err := closedLoop(m, app, servers, traces[row.Mode])
			if err != nil {
				return err
			}
			var means []float64
			for _, r := range recs {
				row.Offered += r.Offered
				row.Delivered += r.Throughput
				means = append(means, r.MeanMS)
				row.P95MS = append(row.P95MS, r.P95MS)
				row.Workers = append(row.Workers, r.Active)
				row.Rates = append(row.Rates, r.Offered)
				row.MeanWorkers += float64(r.Active) / float64(len(recs))
				row.MaxWorkers = max(row.MaxWorkers, r.Active)
			}
			if row.Offered > 0 {
				row.ThroughputRatio = row.Delivered / row.Offered
			}
			row.MedianMeanMS = quantile(means, 0.5)
			row.P95P95MS = quantile(row.P95MS, 0.95)
			row.Plans, row.Infeasible = ctrl.Replans(), ctrl.Infeasible()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rows, nil
}

// quantile is the q-quantile of xs by linear interpolation between order
// statistics (0 for an empty slice).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

// activeServers counts the distinct servers hosting a replica with a
// positive share in plan.
func activeServers(plan [][]env.Replica) int {
	seen := map[int]bool{}
	for _, rs := range plan {
		for _, r := range rs {
			if r.Share > 0 {
				seen[r.Server] = true
			}
		}
	}
	return len(seen)
}
