package core

import (
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

// frames encodes the state of the key groups id owns in owners as
// Snapshot frames (From NoID), in key-group then key order, and counts
// them.
func (k *ckpt) frames(owners [][ops.KeyGroups]uint32, id uint32) ([]byte, uint32) {
	groups := make([]uint32, 0, len(k.state))
	for g := range k.state {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	var frames []byte
	var n uint32
	var sw wire.SnapshotWriter
	for _, g := range groups {
		op, kg := g>>8, g&0xff
		if int(op) >= len(owners) || owners[op][kg] != id {
			continue
		}
		keys := make([]uint64, 0, len(k.state[g]))
		for key := range k.state[g] {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		frames = sw.Begin(frames, k.id, wire.NoID, uint16(op), uint16(kg))
		start := len(frames)
		n++
		for _, key := range keys {
			if len(frames)-start > wire.MaxFrame/2 {
				frames = sw.Finish(frames)
				frames = sw.Begin(frames, k.id, wire.NoID, uint16(op), uint16(kg))
				start = len(frames)
				n++
			}
			frames = sw.Add(frames, key, k.state[g][key])
		}
		frames = sw.Finish(frames)
	}
	return frames, n
}

// ckRun is the checkpoint in progress.
type ckRun struct {
	ckpt
	mode            string
	start, deadline time.Duration
	draining        bool              // pause: waiting for the inputs before the cut
	wait            map[uint32]bool   // workers whose SnapshotDone is missing
	frames          map[uint32]uint32 // snapshot frames received, by worker
	members         []uint32          // the workers asked (sent Abort on a discard)
	alignNS, snapNS uint64            // the longest alignment and copy of one worker
	stat            CheckpointStat
}

// coordinator is the checkpoint coordinator: when checkpoints fall due,
// the run in progress and its snapshot frames, the last complete
// checkpoint. It sends nothing itself (the Core does).
type coordinator struct {
	interval, timeout time.Duration
	mode              string
	last              *ckpt // the empty state covering no input until the first completes
	run               *ckRun
	next              uint64 // the last ID issued
	dueAt             time.Duration
	stats             []CheckpointStat
}

func newCoordinator(interval, timeout time.Duration, mode string) coordinator {
	return coordinator{interval: interval, timeout: timeout, mode: mode, last: &ckpt{state: map[uint32]map[uint64][]byte{}}}
}

// start sets the first checkpoint due one interval after the load
// started at now.
func (k *coordinator) start(now time.Duration) { k.dueAt = now + k.interval }

// due reports whether a periodic checkpoint is due at now, and moves the
// next one on past now (a late one is not made up for, as a ticker drops
// ticks).
func (k *coordinator) due(now time.Duration) bool {
	if k.interval <= 0 || now < k.dueAt {
		return false
	}
	for k.dueAt <= now {
		k.dueAt += k.interval
	}
	return true
}

// open starts checkpoint next+1 over the inputs [0, cut).
func (k *coordinator) open(now time.Duration, cut int, sinceLoad float64) *ckRun {
	k.next++
	r := &ckRun{ckpt: ckpt{id: k.next, cut: cut, state: map[uint32]map[uint64][]byte{}}, mode: k.mode,
		start: now, deadline: now + k.timeout, wait: map[uint32]bool{}, frames: map[uint32]uint32{}}
	r.stat = CheckpointStat{ID: r.id, AtS: sinceLoad, Cut: cut, Mode: k.mode}
	k.run = r
	return r
}

// snapshot keeps one Snapshot frame from worker from of the run in
// progress; owners is the current placement. A frame of a discarded
// checkpoint is ignored; one that does not fit is refused (an error) and
// changes nothing.
func (k *coordinator) snapshot(from uint32, s wire.Snapshot, owners [][ops.KeyGroups]uint32) error {
	run := k.run
	switch {
	case s.ID > k.next:
		return fmt.Errorf("snapshot for checkpoint %d, which was never asked for", s.ID)
	case run == nil || run.id != s.ID:
		return nil // of a discarded checkpoint
	case s.From != from:
		return fmt.Errorf("snapshot says it is from %d", s.From)
	case !run.wait[from]:
		return fmt.Errorf("snapshot of checkpoint %d after this worker's snapshot-done", s.ID)
	case int(s.Op) >= len(owners) || int(s.KG) >= ops.KeyGroups || owners[s.Op][s.KG] != from:
		return fmt.Errorf("snapshot of operator %d key group %d, which this worker does not own", s.Op, s.KG)
	}
	g := uint32(s.Op)<<8 | uint32(s.KG)
	m := run.state[g]
	if m == nil {
		m = make(map[uint64][]byte, len(s.Keys))
		run.state[g] = m
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

// snapshotDone ends worker from's part of the run in progress at epoch.
// It returns done when every worker's part arrived, and discard (a
// reason) when the worker's answer discards the checkpoint; err refuses a
// frame that does not fit.
func (k *coordinator) snapshotDone(from uint32, d wire.SnapshotDone, epoch uint64) (done bool, discard string, err error) {
	run := k.run
	switch {
	case d.ID > k.next:
		return false, "", fmt.Errorf("snapshot-done for checkpoint %d, which was never asked for", d.ID)
	case run == nil || run.id != d.ID || run.draining:
		return false, "", nil
	case d.From != from:
		return false, "", fmt.Errorf("snapshot-done says it is from %d", d.From)
	case !run.wait[from]:
		return false, "", fmt.Errorf("snapshot-done of checkpoint %d repeated", d.ID)
	case !d.OK:
		return false, fmt.Sprintf("worker %d could not snapshot at epoch %d", from, d.Epoch), nil
	case d.Frames != run.frames[from] || d.Epoch != epoch:
		return false, fmt.Sprintf("worker %d reports %d frames at epoch %d, the planner got %d at %d", from, d.Frames, d.Epoch, run.frames[from], epoch),
			fmt.Errorf("snapshot-done for %d frames at epoch %d, got %d frames at epoch %d", d.Frames, d.Epoch, run.frames[from], epoch)
	}
	run.alignNS, run.snapNS = max(run.alignNS, d.AlignNS), max(run.snapNS, d.SnapNS)
	delete(run.wait, from)
	return len(run.wait) == 0, "", nil
}

// finish ends the run in progress at now (complete: it becomes the last
// checkpoint) and returns its measurements.
func (k *coordinator) finish(now time.Duration, complete bool, why string) CheckpointStat {
	run := k.run
	k.run = nil
	st := run.stat
	st.DurationMS = ms(now - run.start)
	st.SnapshotMS = float64(run.snapNS) / 1e6
	if run.mode == ModePause {
		st.PauseMS = st.DurationMS
	} else {
		st.AlignMS = float64(run.alignNS) / 1e6
	}
	if complete {
		st.Complete = true
		st.Keys, st.Bytes = run.keys, run.bytes
		k.last = &run.ckpt
	} else {
		st.Reason = why
	}
	k.stats = append(k.stats, st)
	return st
}

// startCheckpoint begins the checkpoint job in progress over the inputs
// generated so far.
func (c *Core) startCheckpoint() {
	run := c.ck.open(c.now, c.log.Inputs, c.sinceLoad())
	if c.ck.mode == ModePause {
		// Stop the ingress; the snapshot requests go out once every
		// input before the cut completed (progressCheckpoint).
		run.draining = true
		c.emit(PauseIngress{})
		return
	}
	ids := c.det.placed()
	if len(ids) == 0 {
		c.discardCheckpoint("no worker to checkpoint")
		return
	}
	// Every input before the cut goes out before the barrier.
	c.emit(Flush{})
	b := &wire.Barrier{ID: run.id, Cut: uint64(run.cut), Epoch: c.epoch, From: wire.NoID, Op: wire.NoOp, Members: ids}
	for _, id := range ids {
		run.wait[id] = true
		c.emit(Send{To: id, Msg: b})
	}
	run.members = ids
}

// progressCheckpoint moves the checkpoint in progress on: a pause
// checkpoint's drain, the timeout.
func (c *Core) progressCheckpoint() {
	run := c.ck.run
	switch {
	case run.draining && c.log.Done >= run.cut:
		run.draining = false
		run.stat.DrainMS = ms(c.now - run.start)
		ids := c.det.alive()
		msg := &wire.Checkpoint{ID: run.id, Epoch: c.epoch}
		for _, id := range ids {
			run.wait[id] = true
			c.emit(Send{To: id, Msg: msg})
		}
		run.members = ids
		if len(ids) == 0 {
			c.discardCheckpoint("no worker to checkpoint")
		}
	case c.now >= run.deadline && run.draining:
		c.discardCheckpoint(fmt.Sprintf("inputs still open after %v", c.ck.timeout))
	case c.now >= run.deadline:
		c.discardCheckpoint(fmt.Sprintf("%d workers did not answer within %v", len(run.wait), c.ck.timeout))
	}
}

// snapshot handles a Snapshot frame.
func (c *Core) snapshot(e Snapshot) {
	m := c.det.byConn(e.Conn)
	if m == nil {
		return
	}
	if err := c.ck.snapshot(m.id, e.S, c.owners); err != nil {
		c.emit(Refuse{Err: fmt.Errorf("planner: worker %d: %w", m.id, err)})
	}
}

// snapshotDone handles a SnapshotDone frame: the last one completes the
// checkpoint.
func (c *Core) snapshotDone(e SnapshotDone) {
	m := c.det.byConn(e.Conn)
	if m == nil {
		return
	}
	done, discard, err := c.ck.snapshotDone(m.id, e.D, c.epoch)
	if err != nil {
		c.emit(Refuse{Err: fmt.Errorf("planner: worker %d: %w", m.id, err)})
	}
	switch {
	case discard != "":
		c.discardCheckpoint(discard)
	case done:
		c.completeCheckpoint()
	}
}

// completeCheckpoint installs the checkpoint in progress once every
// participant's snapshot arrived. With barriers every input before the cut
// is then complete (each record executed before its task's snapshot, and
// its weight came back first): one that is not discards it.
func (c *Core) completeCheckpoint() {
	run := c.ck.run
	if c.log.Done < run.cut {
		c.discardCheckpoint(fmt.Sprintf("input %d before the cut %d is not complete", c.log.Done, run.cut))
		return
	}
	prev := c.ck.last.cut
	st := c.ck.finish(c.now, true, "")
	c.emit(CheckpointCompleted{ID: st.ID, Cut: st.Cut, Prev: prev})
	if st.Mode == ModePause {
		c.emit(ResumeIngress{})
		c.notef("checkpoint %d: %d inputs, %d keys, %d bytes; ingress paused %.1f ms (drain %.1f ms)", st.ID, st.Cut, st.Keys, st.Bytes, st.PauseMS, st.DrainMS)
	} else {
		c.notef("checkpoint %d: %d inputs, %d keys, %d bytes; %.1f ms, alignment ≤ %.1f ms, snapshot ≤ %.2f ms", st.ID, st.Cut, st.Keys, st.Bytes, st.DurationMS, st.AlignMS, st.SnapshotMS)
	}
	c.cur = nil
}

// discardCheckpoint discards the checkpoint in progress: the previous
// complete one stays; with barriers the live participants are told to stop
// aligning it, with a pause the ingress resumes.
func (c *Core) discardCheckpoint(why string) {
	run := c.ck.run
	if run == nil {
		return
	}
	st := c.ck.finish(c.now, false, why)
	if st.Mode == ModePause {
		c.emit(ResumeIngress{})
	} else {
		a := &wire.Abort{ID: run.id}
		for _, id := range run.members {
			if c.IsAlive(id) {
				c.emit(Send{To: id, Msg: a})
			}
		}
	}
	c.notef("checkpoint %d discarded: %s", st.ID, why)
	c.cur = nil
}
