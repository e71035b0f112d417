package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// placeReq is a checked placement for the migration goroutine; installed
// is closed once the worker routes under it.
type placeReq struct {
	pl        wire.Placement
	installed chan struct{}
	restore   *restoring // nil: a migration
}

// early is a frame of the next epoch that arrived before this worker
// installed it, kept in arrival order.
type early struct {
	batch *wire.Batch
	state *wire.State
}

// checkPlacement checks a placement against the current one: the next
// epoch, an owner table per operator, and moves that are exactly the diff.
func (w *Worker) checkPlacement(pl *wire.Placement) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(pl.Owners) != w.nOps {
		return fmt.Errorf("worker: placement has owners for %d operators, want %d", len(pl.Owners), w.nOps)
	}
	if w.owners == nil {
		if pl.Epoch == 0 || len(pl.Moves) != 0 {
			return fmt.Errorf("worker: first placement has epoch %d and %d moves, want ≥ 1 and none", pl.Epoch, len(pl.Moves))
		}
		return nil
	}
	if pl.Epoch != w.epoch+1 {
		return fmt.Errorf("worker: placement for epoch %d, want %d", pl.Epoch, w.epoch+1)
	}
	want := diff(w.owners, pl.Owners)
	if !slices.Equal(want, pl.Moves) {
		return fmt.Errorf("worker: placement for epoch %d lists %d moves, the owners differ in %d key groups", pl.Epoch, len(pl.Moves), len(want))
	}
	return nil
}

// diff returns the moves from old to new owners, by operator then key group.
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

// runMigrations applies placements one at a time.
func (w *Worker) runMigrations(ctx context.Context, client *transport.Client) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-w.placeCh:
			var rep wire.Migrated
			if r.restore != nil {
				rep = w.restore(ctx, client, r)
			} else {
				rep = w.migrate(ctx, client, r)
			}
			w.mu.Lock()
			if !w.closing {
				w.planner.frame(rep.Append)
			}
			w.mu.Unlock()
		}
	}
}

// migrate installs a placement and carries out this worker's part of its
// moves (see the package documentation).
func (w *Worker) migrate(ctx context.Context, client *transport.Client, r placeReq) wire.Migrated {
	pl := r.pl
	t0 := time.Now()
	w.mu.Lock()
	rep := wire.Migrated{From: w.id, Epoch: pl.Epoch}
	first := w.owners == nil
	if w.bar != nil {
		// The planner never reconfigures during a checkpoint; one still
		// aligning here was discarded.
		w.abandon(w.bar)
	}
	w.paused = true
	for !first && !w.closing && w.anyRunning() {
		w.drained.Wait()
	}
	w.prevMem = w.members
	w.members = map[uint32]string{}
	for _, m := range pl.Members {
		w.members[m.ID] = m.Addr
	}
	w.epoch = pl.Epoch
	w.epochNow.Store(pl.Epoch)
	w.owners = slices.Clone(pl.Owners)
	w.ensurePeers(ctx, client)
	senders := map[uint32]bool{}
	dests := map[uint32]bool{}
	for _, m := range pl.Moves {
		switch w.id {
		case m.To:
			if _, alive := w.members[m.From]; !alive {
				continue // the previous owner failed: nothing will come
			}
			w.holds[holdKey(int(m.Op), int(m.KG))] = &hold{from: m.From}
			senders[m.From] = true
		case m.From:
			dests[m.To] = true
			w.handOver(m, &rep)
		}
	}
	for _, p := range w.peers {
		p.closeBatch()
	}
	// Frames of this epoch that arrived early, in arrival order.
	future := w.future
	w.future, w.futureN = nil, 0
	for _, e := range future {
		switch {
		case e.batch != nil && e.batch.Epoch == w.epoch:
			w.applyRecords(e.batch.From, e.batch.Records)
		case e.state != nil && e.state.Epoch == w.epoch:
			if err := w.applyState(e.state.From, *e.state); err != nil {
				w.stats.Refused++
				w.logf("refused an early state frame: %v", err)
			}
		default:
			w.stats.Refused++
		}
	}
	// Tell every peer this worker switched: no record of an earlier epoch
	// follows on its stream.
	mark := wire.Mark{Epoch: w.epoch, From: w.id}
	for _, p := range w.peers {
		p.frame(func(b []byte) []byte { return mark.Append(b, wire.KindMark) })
	}
	w.paused = false
	w.work.Broadcast()
	rep.PauseNS = uint64(time.Since(t0))
	if first {
		rep.PauseNS = 0
		w.readyOne.Do(func() { close(w.ready) })
	}
	close(r.installed)
	w.stats.Migrations++
	// Every member must switch before the handover ends: after its Mark no
	// straggler can reach this worker. (A worker leaving the cluster stays
	// a member, owning nothing, for the epoch that drains it; a worker that
	// left or failed earlier owned nothing and sends nothing.)
	peers := map[uint32]bool{}
	for id := range w.members {
		peers[id] = true
	}
	delete(peers, w.id)
	w.mu.Unlock()

	deadline := time.Now().Add(w.cfg.MigrationTimeout)
	if !first && !w.waitFor(ctx, deadline, func() bool {
		for id := range peers {
			if w.marks[id] < pl.Epoch {
				return false
			}
		}
		return true
	}) {
		w.logf("epoch %d: not every peer switched within %v", pl.Epoch, w.cfg.MigrationTimeout)
	}
	w.mu.Lock()
	end := wire.Mark{Epoch: pl.Epoch, From: w.id}
	for id := range dests {
		if p := w.peers[id]; p != nil {
			p.frame(func(b []byte) []byte { return end.Append(b, wire.KindEnd) })
		}
	}
	w.mu.Unlock()
	if !w.waitFor(ctx, deadline, func() bool {
		for id := range senders {
			if w.ends[id] < pl.Epoch {
				return false
			}
		}
		return true
	}) {
		w.logf("epoch %d: handovers from %d senders did not end within %v; releasing held key groups", pl.Epoch, len(senders), w.cfg.MigrationTimeout)
		w.mu.Lock()
		for k, h := range w.holds {
			w.release(k, h)
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.dropPeers()
	w.mu.Unlock()
	rep.WaitNS = uint64(time.Since(t0))
	return rep
}

func (w *Worker) anyRunning() bool {
	for _, t := range w.tasks {
		if t.running {
			return true
		}
	}
	return false
}

// waitFor waits until cond (evaluated with w.mu held) holds, the deadline
// passes or ctx ends; it reports whether cond held.
func (w *Worker) waitFor(ctx context.Context, deadline time.Time, cond func() bool) bool {
	for {
		w.mu.Lock()
		ok := cond()
		w.mu.Unlock()
		if ok {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-w.migCh:
		case <-time.After(min(left, 50*time.Millisecond)):
		}
	}
}

// handOver takes a moving key group's state and queued requests and
// encodes them straight into the new owner's send buffer (w.mu held,
// executions drained), in frames of at most about MaxFrame/2 bytes.
func (w *Worker) handOver(m wire.Move, rep *wire.Migrated) {
	t := w.tasks[m.Op]
	state := t.state[m.KG]
	t.state[m.KG] = map[uint64][]byte{}
	// Split the queue: requests of the moving group leave in order.
	var queued []wire.Record
	kept := t.q[t.head:t.head]
	for _, r := range t.q[t.head:] {
		if ops.KeyGroup(r.Key) == int(m.KG) {
			queued = append(queued, r.Record)
			continue
		}
		kept = append(kept, r)
	}
	clear(t.q[t.head+len(kept):])
	t.q = t.q[:t.head+len(kept)]
	w.inFlight -= len(queued)
	rep.MovedQueued += uint64(len(queued))
	rep.MovedGroups++
	rep.MovedKeys += uint64(len(state))
	p := w.peers[m.To]
	if p == nil {
		w.logf("epoch %d: no stream to worker %d; key group %d/%d lost", w.epoch, m.To, m.Op, m.KG)
		return
	}
	p.closeBatch()
	const limit = wire.MaxFrame / 2
	var sw wire.StateWriter
	b := sw.Begin(p.buf, w.epoch, w.id, m.Op, m.KG)
	start := len(b)
	for k, v := range state { // order is irrelevant: the receiver installs a map
		if len(b)-start > limit {
			b = sw.Finish(sw.Queued(b))
			b = sw.Begin(b, w.epoch, w.id, m.Op, m.KG)
			start = len(b)
		}
		b = sw.AddKey(b, k, v)
		rep.MovedBytes += uint64(len(v) + 8)
	}
	b = sw.Queued(b)
	for i := range queued {
		if len(b)-start > limit {
			b = sw.Finish(b)
			b = sw.Queued(sw.Begin(b, w.epoch, w.id, m.Op, m.KG))
			start = len(b)
		}
		b = sw.AddQueued(b, &queued[i])
	}
	p.buf = sw.Finish(b)
	p.wake()
}

// onState applies a key group handed over by a peer, or keeps it if it is
// for the epoch this worker has not installed yet.
func (w *Worker) onState(from uint32, st wire.State) error {
	if st.From != from {
		return fmt.Errorf("worker: state says it is from %d on peer %d's stream", st.From, from)
	}
	if int(st.Op) >= w.nOps {
		return fmt.Errorf("worker: state for operator %d of %d", st.Op, w.nOps)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if st.Epoch < w.floor {
		return nil // a handover the last restore superseded
	}
	if st.Epoch == w.epoch+1 {
		c := st
		c.Values = make([][]byte, len(st.Values))
		for i, v := range st.Values {
			c.Values[i] = w.alloc(v)
		}
		c.Queued = make([]wire.Record, len(st.Queued))
		for i, r := range st.Queued {
			r.Payload = w.alloc(r.Payload)
			c.Queued[i] = r
		}
		w.future = append(w.future, early{state: &c})
		return nil
	}
	return w.applyState(from, st)
}

// applyState installs a handed-over key group (w.mu held). It refuses a
// group this worker is not receiving from that sender in this epoch.
func (w *Worker) applyState(from uint32, st wire.State) error {
	if st.Epoch != w.epoch {
		return fmt.Errorf("worker: state for unknown epoch %d (this worker is at %d)", st.Epoch, w.epoch)
	}
	h := w.holds[holdKey(int(st.Op), int(st.KG))]
	if h == nil || h.from != from {
		return fmt.Errorf("worker: state for operator %d key group %d, which epoch %d does not move from %d to this worker", st.Op, st.KG, st.Epoch, from)
	}
	m := w.tasks[st.Op].state[st.KG]
	for i, k := range st.Keys {
		m[k] = append([]byte(nil), st.Values[i]...)
	}
	for _, r := range st.Queued {
		r.Payload = w.alloc(r.Payload)
		w.inFlight++
		h.fromOld = append(h.fromOld, rec{Record: r, at: w.now()})
	}
	return nil
}

// onMark records a peer's Mark or End; an End releases the key groups that
// peer handed over.
func (w *Worker) onMark(from uint32, k wire.Kind, m wire.Mark) error {
	if m.From != from {
		return fmt.Errorf("worker: %v says it is from %d on peer %d's stream", k, m.From, from)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if m.Epoch < w.floor {
		return nil // of a migration the last restore superseded
	}
	if m.Epoch > w.epoch+1 || m.Epoch+1 < w.epoch {
		return fmt.Errorf("worker: %v for unknown epoch %d (this worker is at %d)", k, m.Epoch, w.epoch)
	}
	if k == wire.KindMark {
		w.marks[from] = max(w.marks[from], m.Epoch)
	} else {
		if m.Epoch != w.epoch {
			return fmt.Errorf("worker: end for epoch %d while this worker is at %d", m.Epoch, w.epoch)
		}
		w.ends[from] = max(w.ends[from], m.Epoch)
		for key, h := range w.holds {
			if h.from == from {
				w.release(key, h)
			}
		}
	}
	select {
	case w.migCh <- struct{}{}:
	default:
	}
	return nil
}

// release queues a held key group's records, the previous owner's first
// (w.mu held).
func (w *Worker) release(key uint32, h *hold) {
	delete(w.holds, key)
	w.stamp()
	for _, r := range h.fromOld {
		w.enqueue(r)
	}
	for _, r := range h.direct {
		w.enqueue(r)
	}
	w.work.Broadcast()
}

// monitor reports metrics every Config.Report. A report's interval is
// the time between the two instants its counters were read, under w.mu:
// it used to be the time between two ticks, and on a worker whose CPU is
// held to a budget the wait for w.mu (and for the goroutine to be
// scheduled at all) after a tick can be seconds, so a report could carry
// several seconds of executions over one second's interval, and the
// rates derived from it (CLASP's W, the observation's ρ) came out too
// high.
func (w *Worker) monitor(ctx context.Context) {
	t := time.NewTicker(w.cfg.Report)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.mu.Lock()
			now := time.Now()
			m := w.collect(now.Sub(last).Seconds())
			last = now
			if w.owners != nil {
				w.planner.frame(m.Append)
			}
			w.mu.Unlock()
		}
	}
}

// collect builds a metrics report and resets the interval counters (w.mu
// held).
func (w *Worker) collect(interval float64) wire.Metrics {
	m := wire.Metrics{From: w.id, Epoch: w.epoch, IntervalS: interval, RemoteDests: uint32(len(w.dests)), Edges: slices.Clone(w.edges)}
	clear(w.dests)
	clear(w.edges)
	for _, t := range w.tasks {
		cpu := t.quota.Stats().Used
		tm := wire.TaskMetrics{Arrived: t.c.arrived, Execs: t.c.execs, ExecNS: t.c.execNS, LatencyNS: t.c.latencyNS, CPUNS: uint64(cpu - t.cpuLast), Queue: uint64(t.len()), Millicores: uint32(t.quota.Millicores())}
		t.cpuLast = cpu
		if !t.running { // a running task's state belongs to its slot
			t.stateKeys, t.stateBytes = 0, 0
			for _, g := range t.state {
				t.stateKeys += uint64(len(g))
				for _, v := range g {
					t.stateBytes += uint64(8 + len(v))
				}
			}
		}
		tm.StateKeys, tm.StateBytes = t.stateKeys, t.stateBytes
		m.Queue += tm.Queue
		m.LoadNS += tm.ExecNS
		m.Tasks = append(m.Tasks, tm)
		t.c = taskCounters{}
	}
	return m
}
