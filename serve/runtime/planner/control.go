package planner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
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
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.closeRow(float64(len(p.rows) + 1))
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
		Workers: int32(len(p.liveIDs())), Epoch: int64(p.epoch)}
	p.secOffer = 0
	for _, id := range p.sortedMembers() {
		m := p.members[id]
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

// assign returns owners for every operator over the workers ids (ascending)
// with key-group counts proportional to shares[i][o] (nil: even), keeping
// each group with its old owner while that owner has room.
func assign(old [][ops.KeyGroups]uint32, nOps int, ids []uint32, shares [][]float64) [][ops.KeyGroups]uint32 {
	out := make([][ops.KeyGroups]uint32, nOps)
	pos := make(map[uint32]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	for o := range nOps {
		quota := counts(len(ids), shares, o)
		have := make([]int, len(ids))
		var placed [ops.KeyGroups]bool
		if old != nil {
			for g := range ops.KeyGroups {
				if i, ok := pos[old[o][g]]; ok && have[i] < quota[i] {
					out[o][g] = ids[i]
					have[i]++
					placed[g] = true
				}
			}
		}
		j := 0
		for g := range ops.KeyGroups {
			if placed[g] {
				continue
			}
			for have[j] >= quota[j] {
				j++
			}
			out[o][g] = ids[j]
			have[j]++
		}
	}
	return out
}

// counts splits the key groups of operator o over n workers by largest
// remainder of KeyGroups·share (ties to the lower index); shares nil or
// summing to 0 split evenly.
func counts(n int, shares [][]float64, o int) []int {
	w := make([]float64, n)
	sum := 0.0
	for i := range n {
		if shares != nil && i < len(shares) && o < len(shares[i]) && shares[i][o] > 0 {
			w[i] = shares[i][o]
			sum += w[i]
		}
	}
	if !(sum > 0) {
		for i := range w {
			w[i] = 1
		}
		sum = float64(n)
	}
	q := make([]int, n)
	type frac struct {
		i int
		f float64
	}
	fr := make([]frac, n)
	left := ops.KeyGroups
	for i := range n {
		x := ops.KeyGroups * w[i] / sum
		q[i] = int(math.Floor(x))
		left -= q[i]
		fr[i] = frac{i, x - math.Floor(x)}
	}
	sort.SliceStable(fr, func(a, b int) bool { return fr[a].f > fr[b].f })
	for k := 0; left > 0; k++ {
		q[fr[k%n].i]++
		left--
	}
	return q
}

// diff lists the key groups whose owner changes, by operator then group.
func diff(old, new [][ops.KeyGroups]uint32) []wire.Move {
	var mv []wire.Move
	for o := range new {
		for g := range ops.KeyGroups {
			if old[o][g] != new[o][g] {
				mv = append(mv, wire.Move{Op: uint16(o), KG: uint16(g), From: old[o][g], To: new[o][g]})
			}
		}
	}
	return mv
}

// scale makes n workers own the key groups with shares (nil: even) and
// waits for the migration; workers beyond n drain and are stopped.
func (p *Planner) scale(ctx context.Context, n int, shares [][]float64, reason string) error {
	p.reconf.Lock()
	defer p.reconf.Unlock()
	p.mu.Lock()
	cur := p.placedIDs()
	if reason != "rejoin" {
		p.target = n
	} else {
		// Decided outside the lock: a reconfiguration since may have
		// placed the newcomers already (a scale step's own new workers
		// look like rejoining ones until it broadcasts).
		live := len(p.liveIDs())
		if live <= len(cur) || len(cur) >= p.target {
			p.mu.Unlock()
			return nil
		}
		n = min(live, p.target)
	}
	p.mu.Unlock()
	if n == len(cur) && shares == nil {
		return nil
	}
	if n > len(cur) {
		if _, err := p.cfg.Provider.Scale(ctx, n); err != nil {
			return fmt.Errorf("planner: start workers: %w", err)
		}
		if err := p.awaitMembers(ctx, n); err != nil {
			return err
		}
	}
	p.mu.Lock()
	ids := p.liveIDs()
	keep, leaving := ids[:min(n, len(ids))], ids[min(n, len(ids)):]
	for _, id := range leaving {
		p.members[id].leaving = true
	}
	owners := assign(p.owners, len(p.cfg.App.Operators), keep, shares)
	mig := p.reconfigure(owners, len(cur), len(keep), reason)
	p.mu.Unlock()
	p.awaitMigration(ctx, mig)
	if len(leaving) > 0 {
		if _, err := p.cfg.Provider.Scale(ctx, n); err != nil {
			return fmt.Errorf("planner: stop workers: %w", err)
		}
		p.mu.Lock()
		for _, id := range leaving {
			if m := p.members[id]; m != nil {
				m.cancel()
				delete(p.members, id)
			}
		}
		p.mu.Unlock()
	}
	return nil
}

// reconfigure broadcasts new owners and starts waiting for every member's
// report (p.mu held).
func (p *Planner) reconfigure(owners [][ops.KeyGroups]uint32, from, to int, reason string) *Migration {
	moves := diff(p.owners, owners)
	p.owners = owners
	p.migWait = map[uint32]bool{}
	for _, id := range p.sortedMembers() {
		p.migWait[id] = true
	}
	p.migDone = make(chan struct{})
	p.migRep = nil
	p.migStart = time.Now()
	pl := p.broadcastPlacement(moves)
	p.logf("epoch %d: %s, %d → %d workers, %d key groups move", pl.Epoch, reason, from, to, len(moves))
	return &Migration{Epoch: pl.Epoch, AtS: p.migStart.Sub(p.start).Seconds(), From: from, To: to, Reason: reason, Moves: len(moves)}
}

// awaitMigration waits for the reports of the current migration and
// records it.
func (p *Planner) awaitMigration(ctx context.Context, mig *Migration) {
	p.mu.Lock()
	done := p.migDone
	p.mu.Unlock()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case <-done:
		mig.Complete = true
	case <-timeout.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	mig.PlannerMS = float64(time.Since(p.migStart).Microseconds()) / 1e3
	for _, r := range p.migRep {
		mig.PauseMSMax = max(mig.PauseMSMax, float64(r.PauseNS)/1e6)
		mig.WaitMSMax = max(mig.WaitMSMax, float64(r.WaitNS)/1e6)
		mig.MovedKeys += r.MovedKeys
		mig.MovedBytes += r.MovedBytes
		mig.MovedQueued += r.MovedQueued
		mig.Pauses = append(mig.Pauses, WorkerPause{Worker: r.From, PauseMS: float64(r.PauseNS) / 1e6, WaitMS: float64(r.WaitNS) / 1e6})
	}
	slices.SortFunc(mig.Pauses, func(a, b WorkerPause) int { return int(a.Worker) - int(b.Worker) })
	if !mig.Complete {
		p.logf("epoch %d: %d workers did not report the migration", mig.Epoch, len(p.migWait))
	}
	p.migWait = nil
	p.migs = append(p.migs, *mig)
}

// failover reassigns the key groups of dead workers to the live ones.
// Without checkpoints it replays every input not yet complete; with them
// it restores the last complete checkpoint everywhere (restoreLocked). The
// dead are marked before the reconfiguration lock is taken, so that a
// checkpoint in progress is discarded at once instead of waiting for them.
func (p *Planner) failover(ctx context.Context, dead []uint32) {
	p.mu.Lock()
	before := len(p.liveIDs())
	gone := map[uint32]bool{}
	for _, id := range dead {
		if m := p.members[id]; m != nil && !m.dead {
			m.dead = true
			m.cancel()
			gone[id] = true
			p.logf("worker %d missed %d heartbeats: dead", id, p.cfg.Miss)
			if p.ckRun != nil {
				p.ckRun.fail(fmt.Sprintf("worker %d died", id))
			}
		}
	}
	if len(gone) == 0 {
		p.mu.Unlock()
		return
	}
	p.failing++ // no checkpoint starts until this failover is done
	p.mu.Unlock()
	p.reconf.Lock()
	defer p.reconf.Unlock()
	p.mu.Lock()
	p.failing--
	ids := p.liveIDs()
	if len(ids) == 0 {
		p.mu.Unlock()
		p.logf("no live worker left")
		return
	}
	p.failures++
	if p.cfg.CheckpointInterval > 0 {
		mig := p.restoreLocked(gone, before)
		p.mu.Unlock()
		p.awaitMigration(ctx, mig)
		return
	}
	owners := assign(p.owners, len(p.cfg.App.Operators), ids, nil)
	mig := p.reconfigure(owners, before, len(ids), "failover")
	replayed := 0
	for i := range p.ins {
		if in := &p.ins[i]; !in.done {
			in.attempt++
			p.send(i)
			replayed++
		}
	}
	p.replayed += replayed
	p.mu.Unlock()
	p.logf("replayed %d inputs", replayed)
	p.awaitMigration(ctx, mig)
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
	t := time.NewTicker(p.cfg.Control)
	defer t.Stop()
	deployed := false // CLASP has made its initial placement
	rounds, due := 0, int(p.cfg.Duration/p.cfg.Control)
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
		case <-t.C:
		}
		now := time.Since(p.start).Seconds()
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
	now := time.Since(p.start).Seconds()
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
	m := p.members[id]
	if m == nil || m.dead || len(mcs) != len(p.cfg.App.Operators) {
		return
	}
	a := wire.Alloc{Epoch: p.epoch}
	for _, mc := range mcs {
		a.Millicores = append(a.Millicores, uint32(max(1, min(mc, wire.MaxMillicores))))
	}
	m.out.frame(a.Append)
}

// taskObs flattens the latest reports (p.mu held).
func (p *Planner) taskObs() []TaskObs {
	var out []TaskObs
	for _, id := range p.liveIDs() {
		mt := p.members[id].metrics
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
	for _, id := range p.liveIDs() {
		m := p.members[id]
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
				if p.owners[o][g] == id {
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
	for _, m := range p.members {
		queued += m.out.queued
	}
	ob.PlannerQueue = float64(queued)
	if n := len(p.rows); n > 0 {
		ob.InputRate = float64(p.rows[n-1].Offered)
		ob.Throughput = float64(p.rows[n-1].Completed)
	}
	// Every report now in an observation is no longer fresh: the next
	// observation marks it Repeated until the worker reports again.
	for _, id := range p.liveIDs() {
		p.members[id].fresh = false
	}
	return ob, len(ob.Workers) > 0
}
