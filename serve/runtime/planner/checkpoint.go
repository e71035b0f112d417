package planner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// ckpt is a completed checkpoint: the keyed state of every key group after
// exactly the inputs [0, cut) — each of them complete, none after them
// started.
type ckpt struct {
	id          uint64
	cut         int
	state       map[uint32]map[uint64][]byte // op<<8 | kg → key → value; absent: empty
	keys, bytes uint64
}

// ckRun is the checkpoint in progress (guarded by Planner.mu).
type ckRun struct {
	ckpt
	wait    map[uint32]bool   // workers whose SnapshotDone is missing
	frames  map[uint32]uint32 // snapshot frames received, by worker
	done    chan struct{}     // closed when wait empties
	abort   chan struct{}     // closed by a failure
	aborted bool
	why     string
	// the longest alignment and snapshot copy reported by one worker
	alignNS, snapNS uint64
}

func (r *ckRun) fail(why string) {
	if !r.aborted {
		r.aborted, r.why = true, why
		close(r.abort)
	}
}

// CheckpointStat is one checkpoint's measurements.
type CheckpointStat struct {
	ID  uint64  `json:"id"`
	AtS float64 `json:"at_s"`
	// Cut is the number of inputs the checkpoint covers (inputs 0..Cut−1).
	Cut int `json:"cut"`
	// Mode is "pause" or "barrier" (Config.CheckpointMode).
	Mode string `json:"mode"`
	// PauseMS is the ingress pause: from stopping the ingress to resuming
	// it (DrainMS waiting for the inputs in flight to complete, then the
	// snapshot round trip). Both are 0 with barriers, which pause nothing.
	PauseMS float64 `json:"pause_ms"`
	DrainMS float64 `json:"drain_ms"`
	// DurationMS is the checkpoint's start (the ingress stopped, or the
	// barriers injected) to its completion or discard.
	DurationMS float64 `json:"duration_ms"`
	// AlignMS is the longest alignment of one task with barriers (the
	// worker's first barrier of the checkpoint to the task's snapshot);
	// SnapshotMS the longest time one worker spent copying its state
	// (all of it while the ingress is paused; summed over its tasks with
	// barriers).
	AlignMS    float64 `json:"align_ms"`
	SnapshotMS float64 `json:"snapshot_ms"`
	Keys       uint64  `json:"keys"`
	Bytes      uint64  `json:"bytes"`
	// Complete is false for a discarded checkpoint; Reason says why.
	Complete bool   `json:"complete"`
	Reason   string `json:"reason,omitempty"`
}

// Restore is one failover that restored a checkpoint.
type Restore struct {
	AtS        float64 `json:"at_s"`
	Epoch      uint64  `json:"epoch"`
	Checkpoint uint64  `json:"checkpoint"` // 0: the empty initial state
	Cut        int     `json:"cut"`
	Groups     int     `json:"restored_groups"` // key groups the dead workers owned
	Replayed   int     `json:"replayed"`
}

// checkpoints takes a checkpoint every Config.CheckpointInterval until
// ctx ends or stop is closed. A checkpoint in progress when stop closes
// finishes first, so the run's final checkpoint (taken after this
// returns) is the last one and no periodic one starts behind it only to
// be discarded when the run ends.
func (p *Planner) checkpoints(ctx context.Context, stop <-chan struct{}) {
	if p.cfg.CheckpointInterval <= 0 {
		return
	}
	t := time.NewTicker(p.cfg.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		select {
		case <-stop:
			return
		default:
		}
		p.checkpoint(ctx)
	}
}

// checkpoint takes one checkpoint in the configured mode.
func (p *Planner) checkpoint(ctx context.Context) {
	if p.cfg.CheckpointMode == ModeBarrier {
		p.checkpointBarrier(ctx)
		return
	}
	p.checkpointPause(ctx)
}

// checkpointPause takes one checkpoint by pausing the ingress (see the
// package documentation): stop the ingress, wait until every input sent
// has completed, ask every worker for its state, resume the ingress when
// all have answered. A worker failure, a refusal or
// Config.CheckpointTimeout discards it; the previous complete checkpoint
// stays the one restored.
func (p *Planner) checkpointPause(ctx context.Context) {
	p.reconf.Lock()
	defer p.reconf.Unlock()
	t0 := time.Now()
	deadline := time.NewTimer(p.cfg.CheckpointTimeout)
	defer deadline.Stop()
	p.mu.Lock()
	run, st := p.startCheckpoint(t0, ModePause)
	p.ckPaused = true
	if p.failing > 0 {
		// A worker died and its failover waits for this lock: its inputs
		// cannot complete before the restore.
		run.fail("a failover is pending")
	}
	aborted := run.aborted
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.ckRun, p.ckPaused = nil, false
		p.flush()
		st.PauseMS = float64(time.Since(t0).Microseconds()) / 1e3
		st.DurationMS = st.PauseMS
		st.SnapshotMS = float64(run.snapNS) / 1e6
		if !st.Complete {
			run.fail("") // late frames of it are ignored
			st.Reason = run.why
		}
		p.ckStats = append(p.ckStats, st)
		p.mu.Unlock()
		if st.Complete {
			p.logf("checkpoint %d: %d inputs, %d keys, %d bytes; ingress paused %.1f ms (drain %.1f ms)", st.ID, st.Cut, st.Keys, st.Bytes, st.PauseMS, st.DrainMS)
		} else {
			p.logf("checkpoint %d discarded: %s", st.ID, st.Reason)
		}
	}()
	if aborted {
		return
	}
	// Phase 1: every input sent completes (replays of a restore included).
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		for p.ckOpen < run.cut && p.ins[p.ckOpen].done && !p.ins[p.ckOpen].redo {
			p.ckOpen++
		}
		quiet := p.ckOpen >= run.cut && p.redoOpen == 0
		p.mu.Unlock()
		if quiet {
			break
		}
		select {
		case <-ctx.Done():
			p.mu.Lock()
			run.fail("the run ended")
			p.mu.Unlock()
			return
		case <-run.abort:
			return
		case <-deadline.C:
			p.mu.Lock()
			run.fail(fmt.Sprintf("inputs still open after %v", p.cfg.CheckpointTimeout))
			p.mu.Unlock()
			return
		case <-tick.C:
		}
	}
	st.DrainMS = float64(time.Since(t0).Microseconds()) / 1e3
	// Phase 2: every live worker snapshots the key groups it owns.
	p.mu.Lock()
	c := wire.Checkpoint{ID: run.id, Epoch: p.epoch}
	for _, id := range p.sortedMembers() {
		run.wait[id] = true
	}
	p.mu.Unlock()
	if p.ckHook != nil {
		p.ckHook(run.id)
	}
	p.mu.Lock()
	for id := range run.wait {
		if m := p.members[id]; m != nil && !m.dead {
			m.out.frame(c.Append)
		}
	}
	p.mu.Unlock()
	if !p.awaitSnapshots(ctx, run, deadline) {
		return
	}
	p.mu.Lock()
	if !run.aborted {
		p.install(run, &st)
	}
	p.mu.Unlock()
}

// startCheckpoint opens the next checkpoint, started at t0 in mode, over
// the inputs generated so far (p.mu held).
func (p *Planner) startCheckpoint(t0 time.Time, mode string) (*ckRun, CheckpointStat) {
	p.ckNext++
	run := &ckRun{ckpt: ckpt{id: p.ckNext, cut: len(p.ins), state: map[uint32]map[uint64][]byte{}},
		wait: map[uint32]bool{}, frames: map[uint32]uint32{}, done: make(chan struct{}), abort: make(chan struct{})}
	p.ckRun = run
	return run, CheckpointStat{ID: run.id, AtS: t0.Sub(p.start).Seconds(), Cut: run.cut, Mode: mode}
}

// awaitSnapshots waits until every worker of run has reported its
// snapshot, and reports whether it did; the run's end, a failure (abort)
// or the deadline discards the checkpoint instead.
func (p *Planner) awaitSnapshots(ctx context.Context, run *ckRun, deadline *time.Timer) bool {
	select {
	case <-ctx.Done():
		p.mu.Lock()
		run.fail("the run ended")
		p.mu.Unlock()
		return false
	case <-run.abort:
		return false
	case <-deadline.C:
		p.mu.Lock()
		run.fail(fmt.Sprintf("%d workers did not answer within %v", len(run.wait), p.cfg.CheckpointTimeout))
		p.mu.Unlock()
		return false
	case <-run.done:
		return true
	}
}

// install makes run the checkpoint restored on a failure and records it
// in st as complete (p.mu held). The inputs it covers are never replayed
// again, so their payloads are dropped.
func (p *Planner) install(run *ckRun, st *CheckpointStat) {
	st.Complete = true
	st.Keys, st.Bytes = run.keys, run.bytes
	old := p.ck.cut
	p.ck = &run.ckpt
	for i := old; i < run.cut; i++ {
		p.ins[i].payload = nil
	}
}

// onSnapshot keeps one Snapshot frame of the checkpoint in progress.
func (p *Planner) onSnapshot(from uint32, s wire.Snapshot) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	run := p.ckRun
	switch {
	case s.ID > p.ckNext:
		return fmt.Errorf("snapshot for checkpoint %d, which was never asked for", s.ID)
	case run == nil || run.id != s.ID || run.aborted:
		return nil // of a discarded checkpoint
	case s.From != from:
		return fmt.Errorf("snapshot says it is from %d", s.From)
	case !run.wait[from]:
		return fmt.Errorf("snapshot of checkpoint %d after this worker's snapshot-done", s.ID)
	case int(s.Op) >= len(p.cfg.App.Operators) || p.owners[s.Op][s.KG] != from:
		return fmt.Errorf("snapshot of operator %d key group %d, which this worker does not own", s.Op, s.KG)
	}
	k := uint32(s.Op)<<8 | uint32(s.KG)
	m := run.state[k]
	if m == nil {
		m = make(map[uint64][]byte, len(s.Keys))
		run.state[k] = m
	}
	for i, key := range s.Keys {
		if _, dup := m[key]; !dup {
			run.keys++
		}
		m[key] = append([]byte(nil), s.Values[i]...)
		run.bytes += uint64(8 + len(s.Values[i]))
	}
	run.frames[from]++
	return nil
}

// onSnapshotDone ends one worker's part of the checkpoint in progress.
func (p *Planner) onSnapshotDone(from uint32, d wire.SnapshotDone) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	run := p.ckRun
	switch {
	case d.ID > p.ckNext:
		return fmt.Errorf("snapshot-done for checkpoint %d, which was never asked for", d.ID)
	case run == nil || run.id != d.ID || run.aborted:
		return nil
	case d.From != from:
		return fmt.Errorf("snapshot-done says it is from %d", d.From)
	case !run.wait[from]:
		return fmt.Errorf("snapshot-done of checkpoint %d repeated", d.ID)
	case !d.OK:
		run.fail(fmt.Sprintf("worker %d could not snapshot at epoch %d", from, d.Epoch))
		return nil
	case d.Frames != run.frames[from] || d.Epoch != p.epoch:
		run.fail(fmt.Sprintf("worker %d reports %d frames at epoch %d, the planner got %d at %d", from, d.Frames, d.Epoch, run.frames[from], p.epoch))
		return fmt.Errorf("snapshot-done for %d frames at epoch %d, got %d frames at epoch %d", d.Frames, d.Epoch, run.frames[from], p.epoch)
	}
	run.alignNS, run.snapNS = max(run.alignNS, d.AlignNS), max(run.snapNS, d.SnapNS)
	delete(run.wait, from)
	if len(run.wait) == 0 {
		close(run.done)
	}
	return nil
}

// flush sends the inputs generated while the ingress was paused (p.mu
// held).
func (p *Planner) flush() {
	if p.ckPaused {
		return
	}
	for ; p.sent < len(p.ins); p.sent++ {
		p.send(p.sent)
	}
}

// restoreLocked is the failover with checkpoints (p.mu and p.reconf held;
// the dead workers are marked): the global rollback. Every live worker
// gets the new owners in a restore placement, preceded by the last
// complete checkpoint's state of the key groups it owns in it; it discards
// everything it holds and replaces its state. Then every input the
// checkpoint does not cover is sent again with a new attempt number — the
// open ones and those that completed after the checkpoint (their effects
// were rolled back everywhere), whose completion is then awaited again
// but not counted twice.
func (p *Planner) restoreLocked(dead map[uint32]bool, before int) *Migration {
	ck := p.ck
	ids := p.liveIDs()
	owners := assign(p.owners, len(p.cfg.App.Operators), ids, nil)
	groups := 0
	for o := range p.owners {
		for g := range ops.KeyGroups {
			if dead[p.owners[o][g]] {
				groups++
			}
		}
	}
	moves := len(diff(p.owners, owners))
	p.owners = owners
	p.migWait = map[uint32]bool{}
	members := p.sortedMembers()
	for _, id := range members {
		p.migWait[id] = true
	}
	p.migDone = make(chan struct{})
	p.migRep = nil
	p.migStart = time.Now()
	p.epoch++
	pl := wire.Placement{Epoch: p.epoch, Owners: slices.Clone(p.owners)}
	p.placed = map[uint32]bool{}
	for _, id := range members {
		pl.Members = append(pl.Members, wire.Member{ID: id, Addr: p.members[id].addr})
		p.placed[id] = true
		p.members[id].placed = true
	}
	keys := make([]uint32, 0, len(ck.state))
	for k := range ck.state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, id := range members {
		var frames []byte
		var n uint32
		var sw wire.SnapshotWriter
		for _, k := range keys {
			op, kg := k>>8, k&0xff
			if owners[op][kg] != id {
				continue
			}
			frames = sw.Begin(frames, ck.id, wire.NoID, uint16(op), uint16(kg))
			start := len(frames)
			n++
			for key, v := range ck.state[k] {
				if len(frames)-start > wire.MaxFrame/2 {
					frames = sw.Finish(frames)
					frames = sw.Begin(frames, ck.id, wire.NoID, uint16(op), uint16(kg))
					start = len(frames)
					n++
				}
				frames = sw.Add(frames, key, v)
			}
			frames = sw.Finish(frames)
		}
		o := p.members[id].out
		r := wire.Restore{Epoch: p.epoch, ID: ck.id, Frames: n}
		o.frame(r.Append)
		o.frame(func(b []byte) []byte { return append(b, frames...) })
		o.frame(pl.Append)
	}
	replayed := 0
	for i := ck.cut; i < len(p.ins); i++ {
		in := &p.ins[i]
		in.attempt++
		if in.done && !in.redo {
			in.redo = true
			p.redoOpen++
		}
		p.send(i)
		replayed++
	}
	p.sent = len(p.ins)
	p.ckOpen = min(p.ckOpen, ck.cut)
	p.replayed += replayed
	at := time.Since(p.start).Seconds()
	p.restores = append(p.restores, Restore{AtS: at, Epoch: p.epoch, Checkpoint: ck.id, Cut: ck.cut, Groups: groups, Replayed: replayed})
	p.logf("epoch %d: failover restores checkpoint %d (inputs < %d) on %d workers; %d key groups of dead workers restored, %d move; replayed %d inputs", p.epoch, ck.id, ck.cut, len(ids), groups, moves, replayed)
	return &Migration{Epoch: p.epoch, AtS: at, From: before, To: len(ids), Reason: "failover", Moves: moves}
}

// finalCheckpoint takes a last checkpoint once every input has completed
// (with checkpoints on): it covers every input, so CheckpointState shows
// the run's final state and the result its size.
func (p *Planner) finalCheckpoint(ctx context.Context) {
	if p.cfg.CheckpointInterval <= 0 || ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	open := uint64(len(p.ins)) - p.completed + uint64(p.redoOpen)
	p.mu.Unlock()
	if open == 0 {
		p.checkpoint(ctx)
	}
}

// CheckpointState returns a copy of operator op's keyed state in the last
// complete checkpoint and the number of inputs that checkpoint covers
// (inputs 0..covered−1). After a run with checkpoints whose inputs all
// completed it is the final state (the run ends with a checkpoint).
func (p *Planner) CheckpointState(op int) (state map[uint64][]byte, covered int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[uint64][]byte{}
	for k, m := range p.ck.state {
		if int(k>>8) != op {
			continue
		}
		for key, v := range m {
			out[key] = append([]byte(nil), v...)
		}
	}
	return out, p.ck.cut
}
