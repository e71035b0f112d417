package planner

import (
	"context"
	"slices"
	"time"

	"streamscale/clasp"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// Row is one second of a run (the Parquet schema; times in seconds after
// the load started, latencies in milliseconds).
type Row struct {
	T            float64 `parquet:"t_s" json:"t_s"`                     // end of the second (the last row may be partial: the run's end)
	Offered      int64   `parquet:"offered" json:"offered"`             // inputs whose intended time fell in the second
	Completed    int64   `parquet:"completed" json:"completed"`         // inputs completed in the second
	P50MS        float64 `parquet:"p50_ms" json:"p50_ms"`               // latency quantiles of those inputs (0: none)
	P95MS        float64 `parquet:"p95_ms" json:"p95_ms"`               //
	P99MS        float64 `parquet:"p99_ms" json:"p99_ms"`               //
	Workers      int32   `parquet:"workers" json:"workers"`             // live placed workers
	Epoch        int64   `parquet:"epoch" json:"epoch"`                 // placement epoch
	PlannerQueue int64   `parquet:"planner_queue" json:"planner_queue"` // records waiting in the planner's outboxes
	WorkerQueue  int64   `parquet:"worker_queue" json:"worker_queue"`   // requests queued at the workers (last reports)
	CPUCores     float64 `parquet:"cpu_cores" json:"cpu_cores"`         // execution time reported, cores
}

// seconds closes a Row every second.
func (p *Planner) seconds(ctx context.Context) {
	t := p.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			p.mu.Lock()
			n := len(p.rows)
			p.mu.Unlock()
			p.closeRow(float64(n + 1))
		}
	}
}

// closeRow closes the Row ending at t seconds.
func (p *Planner) closeRow(t float64) {
	p.mu.Lock()
	lat := p.lat
	p.lat = nil
	slices.Sort(lat)
	r := Row{T: t, Offered: int64(p.secOffer), Completed: int64(len(lat)),
		P50MS: quantile(lat, 0.5), P95MS: quantile(lat, 0.95), P99MS: quantile(lat, 0.99),
		Workers: int32(len(p.core.Live())), Epoch: int64(p.core.Epoch())}
	p.secOffer = 0
	for _, id := range p.core.Alive() {
		m := p.byID[id]
		if m == nil {
			continue
		}
		r.PlannerQueue += int64(m.out.queued)
		r.WorkerQueue += int64(m.metrics.Queue)
		if m.metrics.IntervalS > 0 {
			r.CPUCores += float64(m.metrics.LoadNS) / 1e9 / m.metrics.IntervalS
		}
	}
	p.rows = append(p.rows, r)
	p.mu.Unlock()
	if p.cfg.Rows != nil {
		p.cfg.Rows(r)
	}
}

// control runs the placement controller (CLASP) and the allocation hook
// every Control until ctx ends or stop is closed. stop closes when the run
// ends (after the drain); the Allocator then still gets a round for every
// Control boundary of the load that had none — the last one, which falls
// at the load's end and races the end of a short drain, or ticks a busy
// host dropped — so a consumer counting its rounds as control intervals
// sees one per Control of the load. The placement controller is not run
// again then. The windows of those rounds are marked (Window.CatchUp).
func (p *Planner) control(ctx context.Context, stop <-chan struct{}) {
	if p.cfg.Controller == "none" && p.cfg.Allocate == nil {
		return
	}
	var cl clasp.Planner
	switch {
	case p.cfg.Controller != "none" && p.cfg.NewPlacer != nil:
		var err error
		if cl, err = p.cfg.NewPlacer(); err != nil {
			p.logf("%s: %v", p.cfg.Controller, err)
			return
		}
	case p.cfg.Controller == "clasp":
		cfg := clasp.DefaultConfig()
		cfg.MaxWorkers = p.cfg.MaxWorkers
		c, err := clasp.New(cfg)
		if err != nil {
			p.logf("clasp: %v", err)
			return
		}
		cl = c
	}
	t := p.clock.NewTicker(p.cfg.Control)
	defer t.Stop()
	deployed := false // CLASP has made its initial placement
	rounds, due := 0, int((p.cfg.Duration-p.resumeAt)/p.cfg.Control)
	for ; ; rounds++ {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			p.mu.Lock()
			p.catchUp = true // TakeWindow marks their windows
			p.mu.Unlock()
			for ; rounds < due && p.cfg.Allocate != nil && ctx.Err() == nil; rounds++ {
				p.allocate()
			}
			return
		case <-t.C():
		}
		now := p.sinceStart().Seconds()
		if cl != nil {
			p.mu.Lock()
			ob, ok := p.observation()
			p.mu.Unlock()
			if ok && !deployed {
				// The planner's first decision is the initial placement, from an
				// observation with nothing placed (the workers started
				// with -workers only carry the load until then).
				ob.Workers, ob.Parallelism = nil, nil
				ok = ob.InputRate > 0
			}
			if ok {
				deployed = true
				plan, err := cl.Plan(now, ob)
				switch {
				case err != nil:
					p.logf("%s: %v", cl.Name(), err)
				case !plan.Changed:
					p.logf("%s: hold (%s; input %.0f/s, throughput %.0f/s)", cl.Name(), plan.Reason, ob.InputRate, ob.Throughput)
				case plan.Changed:
					if err := p.scale(ctx, plan.NumWorkers(), plan.Shares(), cl.Name()+": "+plan.Reason); err != nil {
						p.logf("%s plan: %v", cl.Name(), err)
					}
				}
			}
		}
		if p.cfg.Allocate != nil {
			p.allocate()
		}
	}
}

// allocate runs one round of the allocation hook on the workers' latest
// reports.
func (p *Planner) allocate() {
	now := p.sinceStart().Seconds()
	p.mu.Lock()
	tasks := p.taskObs()
	p.mu.Unlock()
	for id, mcs := range p.cfg.Allocate(now, tasks) {
		p.setAlloc(id, mcs)
	}
}

// setAlloc sends a worker its tasks' millicores.
func (p *Planner) setAlloc(id uint32, mcs []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.byID[id]
	if m == nil || !p.core.IsAlive(id) || len(mcs) != len(p.cfg.App.Operators) {
		return
	}
	a := wire.Alloc{Epoch: p.core.Epoch()}
	for _, mc := range mcs {
		a.Millicores = append(a.Millicores, uint32(max(1, min(mc, wire.MaxMillicores))))
	}
	m.out.frame(a.Append)
}

// taskObs flattens the latest reports (p.mu held).
func (p *Planner) taskObs() []TaskObs {
	var out []TaskObs
	for _, id := range p.core.Live() {
		if p.byID[id] == nil {
			continue
		}
		mt := p.byID[id].metrics
		if mt.IntervalS <= 0 {
			continue
		}
		for o, t := range mt.Tasks {
			obs := TaskObs{Worker: id, Op: o, InputRate: float64(t.Arrived) / mt.IntervalS, Throughput: float64(t.Execs) / mt.IntervalS,
				Queue: float64(t.Queue), CPUCores: float64(t.CPUNS) / 1e9 / mt.IntervalS, Millicores: int(t.Millicores)}
			if t.Execs > 0 {
				obs.LatencyMS = float64(t.LatencyNS) / float64(t.Execs) / 1e6
			}
			out = append(out, obs)
		}
	}
	return out
}

// Threshold is a simple vertical rule: a task using more than High of its
// allocation gets Step more millicores, one using less than Low gets Step
// fewer (never below Min).
func Threshold(low, high float64, step, minMC int) Allocator {
	return func(_ float64, tasks []TaskObs) map[uint32][]int {
		out := map[uint32][]int{}
		changed := map[uint32]bool{}
		for _, t := range tasks {
			if out[t.Worker] == nil {
				out[t.Worker] = make([]int, 0, 8)
			}
			mc := t.Millicores
			use := t.CPUCores * 1000 / float64(max(1, mc))
			switch {
			case use > high:
				mc += step
				changed[t.Worker] = true
			case use < low && mc-step >= minMC:
				mc -= step
				changed[t.Worker] = true
			}
			out[t.Worker] = append(out[t.Worker], mc)
		}
		for id := range out {
			if !changed[id] {
				delete(out, id)
			}
		}
		return out
	}
}

// ClaspApp describes an ops.App to CLASP: nominal 100 µs executions and
// ratio-1 edges, used only until measurements exist.
func ClaspApp(app ops.App) clasp.App {
	a := clasp.App{Name: app.Name}
	for _, s := range app.Operators {
		a.Operators = append(a.Operators, clasp.Operator{Name: s.Name, ExecUS: 100, Stateful: s.Stateful})
	}
	for _, e := range app.Edges {
		a.Edges = append(a.Edges, clasp.Edge{From: e[0], To: e[1], Ratio: 1})
	}
	return a
}

// observation builds CLASP's observation (paper Table 2) from the workers'
// latest reports (p.mu held); ok is false until every live worker reported.
func (p *Planner) observation() (clasp.Observation, bool) {
	app := p.cfg.App
	nOps := len(app.Operators)
	ob := clasp.Observation{App: ClaspApp(app), Bandwidth: 1e9, Parallelism: make([]int, nOps), StateBytes: make([]float64, nOps)}
	owners := p.core.Owners()
	for _, id := range p.core.Live() {
		m := p.byID[id]
		if m == nil {
			return ob, false
		}
		mt := m.metrics
		if mt.IntervalS <= 0 {
			return ob, false
		}
		iv := mt.IntervalS
		wo := clasp.WorkerObs{ID: int(id), Queue: float64(mt.Queue), RemoteDests: float64(mt.RemoteDests), LoadUS: float64(mt.LoadNS) / 1e3 / iv, ReportS: iv, Repeated: !m.fresh,
			Exec: make([]float64, nOps), ExecUS: make([]float64, nOps), EdgeRate: make([]float64, len(app.Edges)), Share: make([]float64, nOps)}
		for o, t := range mt.Tasks {
			wo.Exec[o] = float64(t.Execs) / iv
			if t.Execs > 0 {
				ns := t.ExecNS
				if p.cfg.ExecCPU {
					ns = t.CPUNS
				}
				wo.ExecUS[o] = float64(ns) / float64(t.Execs) / 1e3
			}
			ob.StateBytes[o] += float64(t.StateBytes)
		}
		for e, em := range mt.Edges {
			wo.EdgeRate[e] = float64(em.Local+em.Remote) / iv
			wo.LocalRate += float64(em.Local) / iv
			wo.RemoteRate += float64(em.Remote) / iv
		}
		for o := range nOps {
			n := 0
			for g := range ops.KeyGroups {
				if owners[o][g] == id {
					n++
				}
			}
			wo.Share[o] = float64(n) / ops.KeyGroups
			if n > 0 {
				ob.Parallelism[o]++
			}
		}
		ob.Workers = append(ob.Workers, wo)
	}
	for o, s := range app.Operators {
		if !s.Stateful {
			ob.StateBytes[o] = 0
		}
	}
	var queued int
	for _, m := range p.conns {
		queued += m.out.queued
	}
	ob.PlannerQueue = float64(queued)
	if n := len(p.rows); n > 0 {
		ob.InputRate = float64(p.rows[n-1].Offered)
		ob.Throughput = float64(p.rows[n-1].Completed)
	}
	// Every report now in an observation is no longer fresh: the next
	// observation marks it Repeated until the worker reports again.
	for _, id := range p.core.Live() {
		p.byID[id].fresh = false
	}
	return ob, len(ob.Workers) > 0
}
