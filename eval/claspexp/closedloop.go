package claspexp

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"streamscale/agents"
	"streamscale/agents/horizontal"
	"streamscale/clasp"
	"streamscale/env"
	"streamscale/rng"
	"streamscale/traces"
)

// Method is a named planner constructor.
type Method = clasp.Method

// Methods returns every horizontal planner of the closed-loop experiments
// (clasp.Methods), each with at most maxWorkers workers, their triggers
// checking saturation with the scenarios' TrueModel.
func Methods(maxWorkers int) []Method { return clasp.Methods(maxWorkers, TrueModel()) }

// closedLoop runs method's planner on app over trace (events/s per step;
// replayed as traces.FromRates) on servers workers
// (every task starts on worker 0) and returns the step records and the
// controller. With warm > 0 the planner's first decision (the initial
// placement) is followed by warm steps without remapping. maxInFlight is
// the workers' cap on requests in flight (0: none).
func closedLoop(m Method, app clasp.App, servers int, trace []float64, warm, maxInFlight int) ([]StepRecord, *horizontal.Adapter, error) {
	cfg, err := ClusterConfig(app, servers, 0, len(trace), nil)
	if err != nil {
		return nil, nil, err
	}
	capInFlight(&cfg, maxInFlight)
	cfg.Workload = traces.FromRates("closed-loop", trace)
	p, err := m.New()
	if err != nil {
		return nil, nil, err
	}
	ctrl, err := horizontal.NewAdapter(p, app, servers, horizontal.AdapterConfig{BandwidthBytes: BandwidthBytes})
	if err != nil {
		return nil, nil, err
	}
	var c agents.HorizontalController = ctrl
	if warm > 0 {
		c = &warmup{c: ctrl, steps: warm}
	}
	recs, err := run(cfg, c, 1, nil)
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
	// MaxInFlight is the workers' cap on requests in flight
	// (env.WorkerPhysics.MaxInFlight); 0, the default, is none.
	MaxInFlight int `json:"max_in_flight,omitempty"`
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
			trace := make([]float64, 0, o.Warm+o.After)
			for range o.Warm {
				trace = append(trace, row.From)
			}
			for range o.After {
				trace = append(trace, row.To)
			}
			_, ctrl, err := closedLoop(byName[row.Method], app, len(maxRate), trace, 0, o.MaxInFlight)
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

// ModeRow is one method's closed-loop run in one load mode with one seed
// (experiment 6).
type ModeRow struct {
	App    string `json:"app"`
	Mode   string `json:"mode"` // "burst" or "gradual"
	Method string `json:"method"`
	Seed   uint64 `json:"seed"`
	// WarmSteps are the steps of the warm-up (WarmupRequests at the
	// trace's first rate on the initial placement, no remapping), excluded
	// from every figure below.
	WarmSteps int `json:"warm_steps"`
	// Offered and Delivered are the totals over the run, events.
	Offered   float64 `json:"offered"`
	Delivered float64 `json:"delivered"`
	// ThroughputRatio is Delivered/Offered.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// MedianMS and P95MS are latency percentiles pooled over all requests
	// (PooledLatency: the per-step distributions, weighted by delivered
	// events).
	MedianMS float64 `json:"median_latency_ms"`
	P95MS    float64 `json:"p95_latency_ms"`
	// MeanWorkers and MaxWorkers are the active workers over the steps.
	MeanWorkers float64 `json:"mean_workers"`
	MaxWorkers  int     `json:"max_workers"`
	// Plans counts the changed plans applied; Infeasible the steps on which
	// the demand exceeded the cluster (the plan was kept).
	Plans      int   `json:"plans"`
	Infeasible int   `json:"infeasible"`
	Workers    []int `json:"workers_per_step"`
	// StepP95MS is the per-step p95, ms.
	StepP95MS []float64 `json:"p95_ms_per_step"`
	// Offered rate per step, events/s.
	Rates []float64 `json:"rates_per_step"`
}

// WarmupRequests is the warm-up before the planner may remap, in requests
// (executions, every chained request counted), as in the paper.
const WarmupRequests = 10000

// ModeTraces returns the two load modes of the paper as rate traces
// relative to top (the 10-worker sustained rate), one value per second,
// drawn from rng.ClaspexpModes with seed:
//
//   - gradual: 10% → 100% → 10% of top in 10% steps, each held for a
//     uniformly drawn 5–10 s;
//   - burst: stages of 5–10 s alternating between a low rate (uniform in
//     10–30%) and a high one (70–100%), starting low, until its volume
//     equals the gradual trace's (the last stage is cut to match).
//
// Both carry the same total volume (to within one step's worth).
func ModeTraces(top float64, seed uint64) map[string][]float64 {
	r := rng.New(seed, rng.ClaspexpModes)
	stage := func() int { return 5 + r.IntN(6) }
	var gradual []float64
	var volume float64
	for k := 1; k <= 19; k++ {
		f := float64(min(k, 20-k)) / 10
		for range stage() {
			gradual = append(gradual, f*top)
			volume += f * top
		}
	}
	var burst []float64
	var sum float64
	for high := false; sum < volume; high = !high {
		f := 0.1 + 0.2*r.Float64()
		if high {
			f = 0.7 + 0.3*r.Float64()
		}
		for range stage() {
			if sum >= volume {
				break
			}
			burst = append(burst, f*top)
			sum += f * top
		}
	}
	return map[string][]float64{"burst": burst, "gradual": gradual}
}

// warmSteps is the number of steps at rate that carry WarmupRequests.
func warmSteps(app clasp.App, rate float64) int {
	d := nominal(&app, 1)
	var perEvent float64
	for _, x := range d.Exec {
		perEvent += x
	}
	if rate <= 0 || perEvent <= 0 {
		return 0
	}
	return int(math.Ceil(WarmupRequests / (rate * perEvent)))
}

// warmup passes the first decision (the initial placement) to the
// controller, then holds for steps steps, then delegates.
type warmup struct {
	c     agents.HorizontalController
	steps int
	n     int
}

func (w *warmup) Reset(seed uint64) error { w.n = 0; return w.c.Reset(seed) }

func (w *warmup) Act(now float64, info env.Info) (env.Action, error) {
	w.n++
	if w.n > 1 && w.n <= 1+w.steps {
		return env.Action{Hold: true}, nil
	}
	return w.c.Act(now, info)
}

// PooledLatency returns the q-quantile of latency pooled over all requests,
// ms. The simulator reports per step a mean m and a p95 only, so each
// step's distribution is taken as a shifted exponential with that mean and
// p95 (scale (p95 − m)/(ln 20 − 1), clamped to a plain exponential of
// mean m where the shift would be negative), weighted by the events the
// step delivered; the quantile of the mixture is found by bisection.
func PooledLatency(recs []StepRecord, q float64) float64 {
	type comp struct{ w, shift, scale float64 }
	var cs []comp
	var tot, hi float64
	for _, r := range recs {
		if r.Throughput <= 0 || r.MeanMS <= 0 {
			continue
		}
		scale := (r.P95MS - r.MeanMS) / (math.Log(20) - 1)
		shift := r.MeanMS - scale
		if scale <= 0 || shift < 0 {
			shift, scale = 0, r.MeanMS
		}
		cs = append(cs, comp{r.Throughput, shift, scale})
		tot += r.Throughput
		hi = max(hi, shift+40*scale)
	}
	if tot == 0 {
		return 0
	}
	cdf := func(x float64) float64 {
		var c float64
		for _, k := range cs {
			if x > k.shift {
				c += k.w * (1 - math.Exp(-(x-k.shift)/k.scale))
			}
		}
		return c / tot
	}
	lo := 0.0
	for range 60 {
		mid := (lo + hi) / 2
		if cdf(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Modes runs every method closed loop on app over both load modes drawn
// with each seed, on servers workers, concurrently; rows come back in
// (mode, seed, method) order. Each run starts with the warm-up. maxInFlight
// is the workers' cap on requests in flight (env.WorkerPhysics.MaxInFlight;
// 0: none).
func Modes(app clasp.App, top float64, servers int, methods []Method, seeds []uint64, maxInFlight int) ([]ModeRow, error) {
	modes := make([]map[string][]float64, len(seeds))
	for i, sd := range seeds {
		modes[i] = ModeTraces(top, sd)
	}
	var rows []ModeRow
	var which []int
	for _, mode := range []string{"burst", "gradual"} {
		for i, sd := range seeds {
			for _, m := range methods {
				rows = append(rows, ModeRow{App: app.Name, Mode: mode, Method: m.Name, Seed: sd})
				which = append(which, i)
			}
		}
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range rows {
		g.Go(func() error {
			row := &rows[i]
			m := methods[i%len(methods)]
			tr := modes[which[i]][row.Mode]
			row.WarmSteps = warmSteps(app, tr[0])
			full := make([]float64, 0, row.WarmSteps+len(tr))
			for range row.WarmSteps {
				full = append(full, tr[0])
			}
			full = append(full, tr...)
			recs, ctrl, err := closedLoop(m, app, servers, full, row.WarmSteps, maxInFlight)
			if err != nil {
				return err
			}
			recs = recs[row.WarmSteps:]
			for _, r := range recs {
				row.Offered += r.Offered
				row.Delivered += r.Throughput
				row.StepP95MS = append(row.StepP95MS, r.P95MS)
				row.Workers = append(row.Workers, r.Active)
				row.Rates = append(row.Rates, r.Offered)
				row.MeanWorkers += float64(r.Active) / float64(len(recs))
				row.MaxWorkers = max(row.MaxWorkers, r.Active)
			}
			if row.Offered > 0 {
				row.ThroughputRatio = row.Delivered / row.Offered
			}
			row.MedianMS = PooledLatency(recs, 0.5)
			row.P95MS = PooledLatency(recs, 0.95)
			row.Plans, row.Infeasible = ctrl.Replans(), ctrl.Infeasible()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rows, nil
}

// ModeSummary is one method's figures in one app and mode: the mean over
// seeds, with the smallest and largest seed's value as the spread.
type ModeSummary struct {
	Delivered    float64    `json:"delivered"` // delivered/offered
	MedianMS     float64    `json:"median_ms"`
	P95MS        float64    `json:"p95_ms"`
	Workers      float64    `json:"workers"` // mean active workers
	Seeds        int        `json:"seeds"`
	DeliveredMin float64    `json:"delivered_min"`
	DeliveredMax float64    `json:"delivered_max"`
	MedianRange  [2]float64 `json:"median_ms_range"`
	P95Range     [2]float64 `json:"p95_ms_range"`
	WorkersRange [2]float64 `json:"workers_range"`
}

// SummarizeModes groups rows by "<app>/<mode>" and method.
func SummarizeModes(rows []ModeRow) map[string]map[string]ModeSummary {
	out := map[string]map[string]ModeSummary{}
	upd := func(r *[2]float64, x float64, first bool) {
		if first {
			*r = [2]float64{x, x}
			return
		}
		r[0], r[1] = min(r[0], x), max(r[1], x)
	}
	for _, r := range rows {
		k := r.App + "/" + r.Mode
		if out[k] == nil {
			out[k] = map[string]ModeSummary{}
		}
		s := out[k][r.Method]
		first := s.Seeds == 0
		s.Delivered += r.ThroughputRatio
		s.MedianMS += r.MedianMS
		s.P95MS += r.P95MS
		s.Workers += r.MeanWorkers
		var d [2]float64
		if !first {
			d = [2]float64{s.DeliveredMin, s.DeliveredMax}
		}
		upd(&d, r.ThroughputRatio, first)
		s.DeliveredMin, s.DeliveredMax = d[0], d[1]
		upd(&s.MedianRange, r.MedianMS, first)
		upd(&s.P95Range, r.P95MS, first)
		upd(&s.WorkersRange, r.MeanWorkers, first)
		s.Seeds++
		out[k][r.Method] = s
	}
	for _, byM := range out {
		for m, s := range byM {
			n := float64(s.Seeds)
			s.Delivered /= n
			s.MedianMS /= n
			s.P95MS /= n
			s.Workers /= n
			byM[m] = s
		}
	}
	return out
}

// quantile is the q-quantile of xs by linear interpolation between order
// statistics, x₍⌊h⌋₎ + (h − ⌊h⌋)(x₍⌊h⌋+1₎ − x₍⌊h⌋₎) at h = q·(n − 1)
// (Hyndman and Fan's definition 7; 0 for an empty slice). Not gonum's
// stat.Quantile: its LinInterp is definition 4 (h = q·n) and its
// Empirical the nearest rank, so either would move the published
// figures (TestQuantileIsNotGonums).
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
