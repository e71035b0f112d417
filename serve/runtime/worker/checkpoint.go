package worker

import (
	"context"
	"fmt"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// snapshotLimit is the size at which a key group's snapshot continues in
// another frame.
const snapshotLimit = wire.MaxFrame / 2

// snapshot answers the planner's Checkpoint: with executions stopped, it
// encodes the state of every key group this worker owns (non-empty ones)
// into Snapshot frames to the planner, then a SnapshotDone. The planner
// asks only when every input it sent has completed and it sends no new
// one until every worker has answered, so nothing is queued, held or
// executing here: a worker that finds otherwise (or is at another epoch)
// answers OK = false and the planner discards the checkpoint.
func (w *Worker) snapshot(c wire.Checkpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.paused
	w.paused = true
	for !w.closing && w.anyRunning() {
		w.drained.Wait()
	}
	defer func() {
		w.paused = was
		w.work.Broadcast()
	}()
	done := wire.SnapshotDone{ID: c.ID, From: w.id, Epoch: w.epoch}
	quiet := c.Epoch == w.epoch && w.owners != nil && len(w.holds) == 0 && w.futureN == 0 && len(w.future) == 0
	for _, t := range w.tasks {
		quiet = quiet && t.len() == 0
	}
	if !quiet {
		w.logf("checkpoint %d: not quiescent at epoch %d (asked at %d); refused", c.ID, w.epoch, c.Epoch)
		w.planner.frame(done.Append)
		return
	}
	t0 := time.Now()
	p := w.planner
	p.closeBatch()
	b := p.buf
	var sw wire.SnapshotWriter
	for o, t := range w.tasks {
		for g := range ops.KeyGroups {
			if w.owners[o][g] != w.id || len(t.state[g]) == 0 {
				continue
			}
			b = sw.Begin(b, c.ID, w.id, uint16(o), uint16(g))
			start := len(b)
			done.Frames++
			for k, v := range t.state[g] { // order is irrelevant: the planner keeps a map
				if len(b)-start > snapshotLimit {
					b = sw.Finish(b)
					b = sw.Begin(b, c.ID, w.id, uint16(o), uint16(g))
					start = len(b)
					done.Frames++
				}
				b = sw.Add(b, k, v)
				done.Keys++
				done.Bytes += uint64(8 + len(v))
			}
			b = sw.Finish(b)
		}
	}
	p.buf = b
	done.OK = true
	done.SnapNS = uint64(time.Since(t0))
	w.stats.Snapshots++
	p.frame(done.Append)
}

// restoring collects a Restore's Snapshot frames until its placement.
type restoring struct {
	r     wire.Restore
	got   uint32
	bad   bool                         // a frame of it was refused
	state map[uint32]map[uint64][]byte // holdKey(op, kg) → key → value
}

// add copies one Snapshot frame of the restore.
func (rs *restoring) add(s wire.Snapshot, nOps int) error {
	switch {
	case s.ID != rs.r.ID || s.From != wire.NoID:
		return fmt.Errorf("worker: snapshot of checkpoint %d from %d during the restore of checkpoint %d", s.ID, s.From, rs.r.ID)
	case int(s.Op) >= nOps:
		return fmt.Errorf("worker: snapshot for operator %d of %d", s.Op, nOps)
	case rs.got >= rs.r.Frames:
		return fmt.Errorf("worker: restore of checkpoint %d announced %d snapshot frames, got more", rs.r.ID, rs.r.Frames)
	}
	rs.got++
	k := holdKey(int(s.Op), int(s.KG))
	m := rs.state[k]
	if m == nil {
		m = map[uint64][]byte{}
		rs.state[k] = m
	}
	for i, key := range s.Keys {
		m[key] = append([]byte(nil), s.Values[i]...)
	}
	return nil
}

// check checks a restore's placement: the next epoch, no moves (the state
// comes from the checkpoint, not from previous owners), every announced
// frame received and every restored key group owned by this worker in it.
func (w *Worker) checkRestore(rs *restoring, pl *wire.Placement) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case len(pl.Owners) != w.nOps:
		return fmt.Errorf("worker: restore placement has owners for %d operators, want %d", len(pl.Owners), w.nOps)
	case w.owners == nil || pl.Epoch != w.epoch+1 || pl.Epoch != rs.r.Epoch:
		return fmt.Errorf("worker: restore placement for epoch %d (restore announced %d), want %d", pl.Epoch, rs.r.Epoch, w.epoch+1)
	case len(pl.Moves) != 0:
		return fmt.Errorf("worker: restore placement for epoch %d lists %d moves, want none", pl.Epoch, len(pl.Moves))
	case rs.bad || rs.got != rs.r.Frames:
		return fmt.Errorf("worker: restore of checkpoint %d: %d of %d snapshot frames", rs.r.ID, rs.got, rs.r.Frames)
	}
	for k := range rs.state {
		if op, kg := int(k>>8), int(k&0xff); pl.Owners[op][kg] != w.id {
			return fmt.Errorf("worker: restore gives operator %d key group %d, which worker %d owns", op, kg, pl.Owners[op][kg])
		}
	}
	return nil
}

// restore installs a restore placement (the global rollback of a
// failover): with executions stopped it discards every request this worker
// holds (queued, held, early, in its send buffers) and every return of
// completion weight not yet sent — all of it belongs to attempts the
// planner replays — replaces the keyed state of every key group by the
// checkpoint's (empty for the groups it does not own), installs the
// placement and refuses from then on records stamped with an earlier
// epoch. Records of the new epoch that arrived early are then applied.
func (w *Worker) restore(ctx context.Context, client *transport.Client, r placeReq) wire.Migrated {
	pl, rs := r.pl, r.restore
	t0 := time.Now()
	w.mu.Lock()
	rep := wire.Migrated{From: w.id, Epoch: pl.Epoch}
	w.paused = true
	for !w.closing && w.anyRunning() {
		w.drained.Wait()
	}
	var dropped uint64
	for _, t := range w.tasks {
		dropped += uint64(t.len())
		clear(t.q)
		t.q, t.head = t.q[:0], 0
		for g := range t.state {
			t.state[g] = map[uint64][]byte{}
		}
	}
	for _, h := range w.holds {
		dropped += uint64(len(h.fromOld) + len(h.direct))
	}
	dropped += uint64(w.resetBarrier())
	clear(w.holds)
	clear(w.done)
	for _, p := range w.peers {
		p.buf, p.open = p.buf[:0], false
	}
	w.stats.Discarded += dropped
	w.inFlight = 0
	w.prevMem = w.members
	w.members = map[uint32]string{}
	for _, m := range pl.Members {
		w.members[m.ID] = m.Addr
	}
	w.epoch = pl.Epoch
	w.epochNow.Store(pl.Epoch)
	w.floor = pl.Epoch
	w.owners = append(w.owners[:0:0], pl.Owners...)
	w.ensurePeers(ctx, client)
	for k, m := range rs.state {
		w.tasks[k>>8].state[k&0xff] = m
		rep.MovedGroups++
		rep.MovedKeys += uint64(len(m))
		for _, v := range m {
			rep.MovedBytes += uint64(8 + len(v))
		}
	}
	future := w.future
	w.future, w.futureN = nil, 0
	for _, e := range future {
		if e.batch != nil && e.batch.Epoch == w.epoch {
			w.applyRecords(e.batch.From, e.batch.Records)
		}
	}
	w.dropPeers()
	w.paused = false
	w.work.Broadcast()
	w.space.Broadcast()
	w.stats.Migrations++
	w.stats.Restores++
	close(r.installed)
	w.mu.Unlock()
	w.logf("epoch %d: restored checkpoint %d (%d key groups, %d keys); discarded %d requests", pl.Epoch, rs.r.ID, rep.MovedGroups, rep.MovedKeys, dropped)
	rep.PauseNS = uint64(time.Since(t0))
	rep.WaitNS = rep.PauseNS
	return rep
}
