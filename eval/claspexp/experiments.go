package claspexp

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

	"streamscale/agents/horizontal"
	"streamscale/clasp"
	"streamscale/env"
)

// Placer returns a placement (worker IDs and shares[w][o]) of app for an
// input rate.
type Placer func(app clasp.App, rate float64) (ids []int, shares [][]float64, err error)

// nominal is the planner-free demand of app at rate (nothing measured).
func nominal(app *clasp.App, rate float64) clasp.Demand {
	ob := clasp.Observation{App: *app, InputRate: rate, Bandwidth: BandwidthBytes}
	return clasp.Derive(&ob)
}

// CLASPPlacer is CLASP's placement on exactly n workers (clasp.PlaceN) for
// the nominal demand at the rate, under the true cost model.
func CLASPPlacer(n int) Placer {
	return func(app clasp.App, rate float64) ([]int, [][]float64, error) {
		m := TrueModel()
		pl, _, err := clasp.PlaceN(&app, nominal(&app, rate), m, m.Budget, n, n)
		if err != nil {
			return nil, nil, err
		}
		return seq(len(pl.Shares)), pl.Shares, nil
	}
}

// PaperPlacer is the placement the paper's experiment (1) uses on n
// workers: SYN's chain split evenly into n contiguous runs of operators;
// every other app bin-packed on execution cost alone (clasp.PlaceN with
// α = β = γ = 0, so the packing balances the executions and ignores the
// request costs).
func PaperPlacer(n int) Placer {
	return func(app clasp.App, rate float64) ([]int, [][]float64, error) {
		if app.Name == "syn" {
			ops := len(app.Operators)
			shares := make([][]float64, n)
			for w := range shares {
				shares[w] = make([]float64, ops)
			}
			for o := range ops {
				shares[o*n/ops][o] = 1
			}
			return seq(n), shares, nil
		}
		m := clasp.CostModel{Budget: TrueModel().Budget}
		pl, _, err := clasp.PlaceN(&app, nominal(&app, rate), m, m.Budget, n, n)
		if err != nil {
			return nil, nil, err
		}
		return seq(len(pl.Shares)), pl.Shares, nil
	}
}

// FixedPlacer always returns the same placement.
func FixedPlacer(ids []int, shares [][]float64) Placer {
	return func(clasp.App, float64) ([]int, [][]float64, error) { return ids, shares, nil }
}

func seq(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// Probe configures the sustainability test of MaxRate.
type Probe struct {
	// Steps is the length of one trial run, seconds. Default 20.
	Steps int
	// MinRatio is the share of the input rate the throughput must reach,
	// averaged over the second half of the run. Default 0.97.
	MinRatio float64
	// MaxBacklogS bounds the backlog's growth over the second half of the
	// run (events queued or in flight at the last step minus at the middle
	// one), in seconds of input. Default 0.25. (A bound on the level would
	// count the events a long or batched pipeline always has in flight.)
	MaxBacklogS float64
	// Iters is the number of bisection steps. Default 10.
	Iters int
	// LocalFirst runs the trials with env.Config.LocalFirst (locality-aware
	// forwarding) instead of share routing; only the routing ablation sets
	// it.
	LocalFirst bool `json:"local_first,omitempty"`
	// ProcessorSharing runs the trials without the worker physics
	// (env.Config.Worker off: every execution at its replica's share of
	// the worker's CPU); only the ablation of (2) sets it.
	ProcessorSharing bool `json:"processor_sharing,omitempty"`
	// MaxInFlight is the workers' cap on requests in flight
	// (env.WorkerPhysics.MaxInFlight); 0, the default, is none.
	MaxInFlight int `json:"max_in_flight,omitempty"`
}

// DefaultProbe returns the defaults documented on the fields.
func DefaultProbe() Probe { return Probe{Steps: 20, MinRatio: 0.97, MaxBacklogS: 0.25, Iters: 10} }

// Sustains runs app at rate on servers workers with the placer's static
// placement and reports whether the rate is sustained: throughput over the
// second half ≥ MinRatio·rate, backlog growth over the second half ≤
// MaxBacklogS·rate and final
// p95 ≤ the SLO.
func Sustains(app clasp.App, servers int, place Placer, rate float64, pr Probe) (bool, error) {
	ids, shares, err := place(app, rate)
	if err != nil {
		return false, err
	}
	reps, err := horizontal.ReplicasFromShares(ids, shares, servers)
	if err != nil {
		return false, err
	}
	cfg, err := ClusterConfig(app, servers, rate, pr.Steps, reps)
	if err != nil {
		return false, err
	}
	cfg.LocalFirst = pr.LocalFirst
	if pr.ProcessorSharing {
		cfg.Worker = env.WorkerPhysics{}
	}
	capInFlight(&cfg, pr.MaxInFlight)
	recs, err := run(cfg, horizontal.Hold{}, 1, nil)
	if err != nil {
		return false, err
	}
	thr, half := 0.0, recs[len(recs)/2:]
	for _, r := range half {
		thr += r.Throughput
	}
	thr /= float64(len(half))
	last := recs[len(recs)-1]
	grow := last.Backlog - half[0].Backlog
	return thr >= pr.MinRatio*rate && grow <= pr.MaxBacklogS*rate && last.P95MS <= DefaultSLOMS, nil
}

// MaxRate finds the largest sustained input rate by geometric bisection,
// starting from the bracket [guess/8, 2·guess] (widened if needed).
func MaxRate(app clasp.App, servers int, place Placer, guess float64, pr Probe) (float64, error) {
	lo, hi := guess/8, guess*2
	for range 6 {
		ok, err := Sustains(app, servers, place, lo, pr)
		if err != nil {
			return 0, err
		}
		if ok {
			break
		}
		lo /= 4
	}
	for range 6 {
		ok, err := Sustains(app, servers, place, hi, pr)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, hi*4
	}
	for range pr.Iters {
		mid := math.Sqrt(lo * hi)
		ok, err := Sustains(app, servers, place, mid, pr)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// PredictedRate is the rate CLASP's load model says n workers carry:
// rate/c for PlaceN's budget multiplier c at a reference rate.
func PredictedRate(app clasp.App, n int) (float64, error) {
	const ref = 1000.0
	m := TrueModel()
	_, c, err := clasp.PlaceN(&app, nominal(&app, ref), m, m.Budget, n, n)
	if err != nil {
		return 0, err
	}
	return ref / c, nil
}

// ScalingRow is one application's maximum sustained throughput per worker
// count under the paper's placement (PaperPlacer).
type ScalingRow struct {
	App       string             `json:"app"`
	Workers   []int              `json:"workers"`
	MaxRate   []float64          `json:"max_rate"`       // events/s, simulated
	Predicted []float64          `json:"predicted_rate"` // events/s, CLASP's load model
	Speedup   map[string]float64 `json:"speedup"`        // max rate at n over at 1 worker
}

// Scaling measures the maximum sustained throughput of every app at each
// worker count (paper Fig. sub-linear scaling) with the paper's placements
// (PaperPlacer). workers must start with 1.
func Scaling(apps []clasp.App, workers []int, pr Probe) ([]ScalingRow, error) {
	return ScalingWith(apps, workers, pr, PaperPlacer)
}

// ScalingWith is Scaling with the placement on n workers given by
// placer(n) (CLASPPlacer for the worker-count experiment, whose observed
// optimal worker counts must be those of the placements CLASP makes).
func ScalingWith(apps []clasp.App, workers []int, pr Probe, placer func(n int) Placer) ([]ScalingRow, error) {
	var rows []ScalingRow
	for _, app := range apps {
		row := ScalingRow{App: app.Name, Workers: workers, Speedup: map[string]float64{}}
		for _, n := range workers {
			pred, err := PredictedRate(app, n)
			if err != nil {
				return nil, err
			}
			r, err := MaxRate(app, n, placer(n), pred, pr)
			if err != nil {
				return nil, fmt.Errorf("claspexp: %s on %d workers: %w", app.Name, n, err)
			}
			row.MaxRate = append(row.MaxRate, r)
			row.Predicted = append(row.Predicted, pred)
			row.Speedup[fmt.Sprint(n)] = r / row.MaxRate[0]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// CoefResult compares the estimated capacity model with the simulated one.
type CoefResult struct {
	Samples   int                `json:"samples"`
	True      clasp.CostModel    `json:"true"`
	Estimated clasp.CostModel    `json:"estimated"` // the RLS estimate (Estimator.Raw)
	RelError  map[string]float64 `json:"rel_error"` // |est − true| / true per parameter
	// MaxRelError is the largest relative error over α, β and W (γ is
	// reported but excluded, as the brief asks).
	MaxRelError float64 `json:"max_rel_error"`
}

// Coefficients runs saturated workloads (every app at twice the rate its
// placement sustains nominally) over several placements that vary the
// request mix — all on one worker, CLASP's packing on n workers, and one
// operator per worker round-robin — and feeds every step's worker metrics
// to one clasp.Estimator. The estimator starts away from the simulated
// model, at α₀ = 100 µs, β₀ = 1,000 µs, γ₀ = 100,000 µs, W₀ = 10⁶ µs/s
// (CoefStart), so the result measures estimation rather than the start;
// the closed-loop runs start from the paper's values (the default).
func Coefficients(apps []clasp.App, steps, maxInFlight int) (CoefResult, error) {
	ec := clasp.DefaultEstimatorConfig()
	ec.Initial = CoefStart
	est, err := clasp.NewEstimator(ec)
	if err != nil {
		return CoefResult{}, err
	}
	for _, app := range apps {
		for _, n := range []int{1, 2, 3, 5} {
			for _, mode := range []string{"clasp", "round-robin"} {
				if n == 1 && mode == "round-robin" {
					continue
				}
				pred, err := PredictedRate(app, n)
				if err != nil {
					return CoefResult{}, err
				}
				var ids []int
				var shares [][]float64
				if mode == "clasp" {
					ids, shares, err = CLASPPlacer(n)(app, pred)
					if err != nil {
						return CoefResult{}, err
					}
				} else {
					ids, shares = seq(n), roundRobin(len(app.Operators), n)
				}
				reps, err := horizontal.ReplicasFromShares(ids, shares, n)
				if err != nil {
					return CoefResult{}, err
				}
				cfg, err := ClusterConfig(app, n, 2*pred, steps, reps)
				if err != nil {
					return CoefResult{}, err
				}
				capInFlight(&cfg, maxInFlight)
				q := horizontal.QuantizeShares(shares)
				var obsErr error
				_, err = run(cfg, horizontal.Hold{}, 1, func(t int, info env.Info) {
					ob, err := horizontal.ObservationFromInfo(app, info, ids, q, nil, BandwidthBytes)
					if err != nil {
						obsErr = err
						return
					}
					est.Observe(float64(t+1), &ob)
				})
				if err != nil {
					return CoefResult{}, err
				}
				if obsErr != nil {
					return CoefResult{}, obsErr
				}
			}
		}
	}
	tr, raw := TrueModel(), est.Raw()
	rel := func(e, t float64) float64 { return math.Abs(e-t) / t }
	res := CoefResult{Samples: est.Samples(), True: tr, Estimated: raw, RelError: map[string]float64{
		"alpha": rel(raw.Alpha, tr.Alpha), "beta": rel(raw.Beta, tr.Beta),
		"gamma": rel(raw.Gamma, tr.Gamma), "budget": rel(raw.Budget, tr.Budget),
	}}
	res.MaxRelError = max(res.RelError["alpha"], res.RelError["beta"], res.RelError["budget"])
	return res, nil
}

// CoefStart is the estimator's start in the coefficient experiment.
var CoefStart = clasp.CostModel{Alpha: 100, Beta: 1000, Gamma: 100000, Budget: 1e6}

// roundRobin puts operator o wholly on worker o mod n.
func roundRobin(ops, n int) [][]float64 {
	s := make([][]float64, n)
	for w := range s {
		s[w] = make([]float64, ops)
	}
	for o := range ops {
		s[o%n][o] = 1
	}
	return s
}

// planFor asks a fresh planner for its initial plan at rate, with n idle
// workers up (FaaSFlow, which assumes no capacity before it has seen one
// saturated, keeps the workers it finds).
func planFor(mk func() (clasp.Planner, error), app clasp.App, rate float64, n int) (clasp.Plan, error) {
	p, err := mk()
	if err != nil {
		return clasp.Plan{}, err
	}
	ob := clasp.Observation{App: app, InputRate: rate, Bandwidth: BandwidthBytes}
	for w := range n {
		ob.Workers = append(ob.Workers, clasp.WorkerObs{ID: w})
	}
	return p.Plan(0, ob)
}

// planWithWorkers finds, by bisection on a log scale of the input rate, the
// largest rate for which the planner's initial plan has at most n workers,
// and returns that plan.
func planWithWorkers(mk func() (clasp.Planner, error), app clasp.App, n int) (clasp.Plan, error) {
	lo, hi := 1.0, 1e7
	best, err := planFor(mk, app, lo, n)
	if err != nil {
		return clasp.Plan{}, err
	}
	for range 60 {
		mid := math.Sqrt(lo * hi)
		p, err := planFor(mk, app, mid, n)
		if err == nil && p.NumWorkers() <= n {
			lo, best = mid, p
		} else {
			hi = mid
		}
	}
	return best, nil
}

// Baselines are CLASP and the planners compared with it
// (clasp.Baselines), each with at most maxWorkers workers, behind CLASP's
// triggers checking saturation with TrueModel.
func Baselines(maxWorkers int) []Method { return clasp.Baselines(maxWorkers, TrueModel()) }

// PlacementRow is one application's maximum sustained throughput on n
// workers under each method's placement.
type PlacementRow struct {
	App     string             `json:"app"`
	Workers int                `json:"workers"`
	MaxRate map[string]float64 `json:"max_rate"` // events/s per method
	Used    map[string]int     `json:"workers_used"`
}

// Placements compares the placements of CLASP (PlaceN on n workers),
// FaaSFlow and Zhang24 (their initial plan at the largest rate for which
// they ask for at most n workers) on n workers. The app × method searches
// run concurrently (GOMAXPROCS at a time); each is sequential and the
// results are stored by index, so the output does not depend on the
// schedule.
func Placements(apps []clasp.App, n int, pr Probe) ([]PlacementRow, error) {
	methods := Baselines(n)[:3]
	rates := make([][]float64, len(apps))
	used := make([][]int, len(apps))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, app := range apps {
		rates[i], used[i] = make([]float64, len(methods)), make([]int, len(methods))
		pred, err := PredictedRate(app, n)
		if err != nil {
			return nil, err
		}
		for k, b := range methods {
			g.Go(func() error {
				place := CLASPPlacer(n)
				u := n
				if b.Name != "clasp" {
					p, err := planWithWorkers(b.New, app, n)
					if err != nil {
						return fmt.Errorf("claspexp: %s %s: %w", app.Name, b.Name, err)
					}
					ids := make([]int, len(p.Workers))
					for i, w := range p.Workers {
						ids[i] = w.ID
					}
					place, u = FixedPlacer(ids, p.Shares()), len(ids)
				}
				r, err := MaxRate(app, n, place, pred, pr)
				if err != nil {
					return fmt.Errorf("claspexp: %s %s: %w", app.Name, b.Name, err)
				}
				rates[i][k], used[i][k] = r, u
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var rows []PlacementRow
	for i, app := range apps {
		row := PlacementRow{App: app.Name, Workers: n, MaxRate: map[string]float64{}, Used: map[string]int{}}
		for k, b := range methods {
			row.MaxRate[b.Name], row.Used[b.Name] = rates[i][k], used[i][k]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// MigrationFigures are one move's figures as the paper reports them.
type MigrationFigures struct {
	// PlannerMS is the planner's decision time, wall clock, ms: CLASP's
	// placement for the new worker count and the migration diff (0 when
	// the run had no clock). No fixed planning time is added.
	PlannerMS float64 `json:"planner_ms"`
	// PauseMSMax is the longest worker pause, ms: a receiver waiting for
	// its state and queued requests, or a sender transmitting.
	PauseMSMax float64 `json:"pause_ms_max"`
	// MovedMB is the state and queued requests the simulator moved.
	MovedMB float64 `json:"moved_mb"`
}

// MigrationRow is one scaling step's migration cost.
type MigrationRow struct {
	App      string  `json:"app"`
	From, To int     `json:"-"`
	Step     string  `json:"step"` // "1->5"
	Rate     float64 `json:"rate"`
	// StateMB is the state of the stateful operators at the move (it grows
	// with the keys seen during the fill).
	StateMB float64 `json:"state_mb"`
	// PlannerMS is the planner's decision time (MigrationFigures).
	PlannerMS float64 `json:"planner_ms"`
	// PlanMakespanS is clasp.Migrate's estimated makespan (no planning
	// time added); PlanMovedMB what it moves.
	PlanMakespanS float64 `json:"plan_makespan_s"`
	PlanMovedMB   float64 `json:"plan_moved_mb"`
	// EnvMaxPauseS and EnvMovedMB are the simulator's Info.Migration:
	// the longest receiver wait and what moved; EnvSenderPauseS the
	// longest sender pause.
	EnvMaxPauseS    float64 `json:"env_max_pause_s"`
	EnvMovedMB      float64 `json:"env_moved_mb"`
	EnvSenderPauseS float64 `json:"env_sender_pause_s"`
	// P95AfterMS is the worst p95 of the 5 steps after the move.
	P95AfterMS float64 `json:"p95_after_ms"`
}

// Migrations moves app between CLASP placements of from and to workers at
// rate (which the smaller must sustain) under CLASP's stop-and-copy, after
// fill steps of state growth on the first. clock, if not nil, times the
// planner's decision. maxInFlight is the workers' cap on requests in
// flight (env.WorkerPhysics.MaxInFlight; 0: none).
func Migrations(app clasp.App, pairs [][2]int, rate float64, fill int, clock func() time.Time, maxInFlight int) ([]MigrationRow, error) {
	var rows []MigrationRow
	const servers = 10
	for _, pair := range pairs {
		from, to := pair[0], pair[1]
		ids0, sh0, err := CLASPPlacer(from)(app, rate)
		if err != nil {
			return nil, err
		}
		reps, err := horizontal.ReplicasFromShares(ids0, sh0, servers)
		if err != nil {
			return nil, err
		}
		cfg, err := ClusterConfig(app, servers, rate, fill+6, reps)
		if err != nil {
			return nil, err
		}
		capInFlight(&cfg, maxInFlight)
		row := MigrationRow{App: app.Name, From: from, To: to, Step: fmt.Sprintf("%d->%d", from, to), Rate: rate}
		q0 := horizontal.QuantizeShares(sh0)
		ctrl := &scriptedMove{at: fill, to: to, app: app, ids0: ids0, q0: q0, row: &row, clock: clock}
		recs, err := run(cfg, ctrl, 1, nil)
		if err != nil {
			return nil, err
		}
		if ctrl.err != nil {
			return nil, ctrl.err
		}
		mig := recs[fill].Migration
		row.EnvMaxPauseS, row.EnvMovedMB = mig.MaxPauseS, mig.MovedMB
		row.EnvSenderPauseS = mig.MaxSenderPauseS
		for _, r := range recs[fill:] {
			row.P95AfterMS = max(row.P95AfterMS, r.P95MS)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// scriptedMove holds, then at step at plans CLASP's placement on to
// workers for the observed demand (timed by clock) with its migration, and
// applies it.
type scriptedMove struct {
	at, to int
	app    clasp.App
	ids0   []int
	q0     [][]float64
	row    *MigrationRow
	clock  func() time.Time
	err    error
}

func (s *scriptedMove) Reset(uint64) error { return nil }

func (s *scriptedMove) Act(now float64, info env.Info) (env.Action, error) {
	if int(now) != s.at {
		return env.Action{Hold: true}, nil
	}
	ob, err := horizontal.ObservationFromInfo(s.app, info, s.ids0, s.q0, nil, BandwidthBytes)
	if err != nil {
		return env.Action{}, err
	}
	for o, b := range ob.StateBytes {
		if s.app.Operators[o].Stateful {
			s.row.StateMB += b / (1 << 20)
		}
	}
	var t0 time.Time
	if s.clock != nil {
		t0 = s.clock()
	}
	d := clasp.Derive(&ob)
	m := TrueModel()
	pl, _, err := clasp.PlaceN(&s.app, d, m, m.Budget, s.to, s.to)
	if err != nil {
		return env.Action{}, err
	}
	ids1 := seq(s.to)
	q1 := horizontal.QuantizeShares(pl.Shares)
	mig := clasp.Migrate(&ob, d, ids1, q1)
	if s.clock != nil {
		s.row.PlannerMS = float64(s.clock().Sub(t0).Microseconds()) / 1000
	}
	s.row.PlanMakespanS = mig.MakespanS
	for _, t := range mig.Transfers {
		s.row.PlanMovedMB += t.Bytes / (1 << 20)
	}
	reps, err := horizontal.ReplicasFromShares(ids1, pl.Shares, len(info.Workers))
	if err != nil {
		return env.Action{}, err
	}
	return env.Action{Replicas: reps}, nil
}
