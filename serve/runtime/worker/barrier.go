package worker

import (
	"fmt"
	"slices"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// barrierRun is the checkpoint this worker is aligning (asynchronous
// barrier snapshotting; see the package documentation). Guarded by w.mu.
type barrierRun struct {
	id, cut uint64
	// members are the workers taking part, from the planner's barrier
	// (nil until it arrives: until then no task may snapshot, as it does
	// not know its channels).
	members map[uint32]bool
	ids     []uint32          // members, ascending
	got     map[uint64]bool   // peer barriers received: chanKey(from, op)
	start   time.Time         // the first barrier of this checkpoint here
	left    int               // tasks not snapshotted yet
	done    wire.SnapshotDone // accumulated report
	bad     string            // why this worker's part is not consistent ("" if it is)
}

func chanKey(from uint32, op uint16) uint64 { return uint64(from)<<16 | uint64(op) }

// after reports whether a record of input (the planner's inputID: attempt
// in the top byte, index + 1 below) is of an input at or after cut, that
// is outside a checkpoint with that cut.
func after(input, cut uint64) bool { return input&(1<<56-1) > cut }

// onBarrier applies a checkpoint's barrier that arrived on the stream
// from from (wire.NoID: the planner's ingress). It checks the barrier
// whole before anything changes: a bad one is refused with an error and
// changes no state; a barrier of a checkpoint this worker has finished or
// discarded, or of an epoch before the last restore, is ignored.
func (w *Worker) onBarrier(from uint32, b wire.Barrier) error {
	if b.From != from {
		return fmt.Errorf("worker: barrier says it is from %d on the stream of %d", b.From, from)
	}
	if from != wire.NoID && (int(b.Op) >= w.nOps || len(w.downs[b.Op]) == 0) {
		return fmt.Errorf("worker: barrier of checkpoint %d from operator %d, which feeds no operator", b.ID, b.Op)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.members[from]; from != wire.NoID && (!ok || from == w.id) {
		return fmt.Errorf("worker: barrier of checkpoint %d from %d, not a peer of epoch %d", b.ID, from, w.epoch)
	}
	if b.Epoch < w.floor || b.ID <= w.barDone {
		w.stats.LateBarriers++
		return nil
	}
	run := w.bar
	same := run != nil && run.id == b.ID
	switch {
	case w.owners == nil:
		return fmt.Errorf("worker: barrier of checkpoint %d before the first placement", b.ID)
	case b.Epoch != w.epoch:
		return fmt.Errorf("worker: barrier of checkpoint %d at epoch %d (this worker is at %d)", b.ID, b.Epoch, w.epoch)
	case same && b.Cut != run.cut:
		return fmt.Errorf("worker: barrier of checkpoint %d with cut %d, its cut is %d", b.ID, b.Cut, run.cut)
	case !same && b.Cut < w.barCut:
		return fmt.Errorf("worker: barrier of checkpoint %d with cut %d, below the last checkpoint's %d", b.ID, b.Cut, w.barCut)
	}
	if from == wire.NoID {
		if same && run.members != nil {
			return fmt.Errorf("worker: the planner's barrier of checkpoint %d repeated", b.ID)
		}
		if !slices.Contains(b.Members, w.id) {
			return fmt.Errorf("worker: barrier of checkpoint %d does not list this worker", b.ID)
		}
		for _, id := range b.Members {
			if _, ok := w.members[id]; !ok {
				return fmt.Errorf("worker: barrier of checkpoint %d lists %d, not a member of epoch %d", b.ID, id, w.epoch)
			}
		}
	} else if same {
		if run.members != nil && !run.members[from] {
			return fmt.Errorf("worker: barrier of checkpoint %d from %d, which does not take part in it", b.ID, from)
		}
		if run.got[chanKey(from, b.Op)] {
			return fmt.Errorf("worker: barrier of checkpoint %d from %d operator %d repeated", b.ID, from, b.Op)
		}
	}
	if !same {
		if run != nil {
			// The planner runs one checkpoint at a time: a newer one
			// means it discarded this one (its abort is on the way).
			w.abandon(run)
		}
		run = w.beginBarrier(b.ID, b.Cut)
	}
	if from == wire.NoID {
		run.ids = slices.Clone(b.Members)
		run.members = make(map[uint32]bool, len(b.Members))
		for _, id := range b.Members {
			run.members[id] = true
		}
		for k := range run.got {
			if !run.members[uint32(k>>16)] && run.bad == "" {
				run.bad = fmt.Sprintf("a barrier came from %d, which does not take part", k>>16)
			}
		}
	} else {
		run.got[chanKey(from, b.Op)] = true
	}
	w.barrierStep()
	return nil
}

// onAbort discards checkpoint a.ID (and any earlier one) if this worker is
// aligning it; its late barriers are then ignored.
func (w *Worker) onAbort(a wire.Abort) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bar != nil && w.bar.id <= a.ID {
		w.abandon(w.bar)
	}
	w.barDone = max(w.barDone, a.ID)
}

// beginBarrier starts aligning checkpoint id (w.mu held). No record of an
// input from cut on can be here yet: on every channel such a record
// follows a barrier of the checkpoint, and this is the first one.
func (w *Worker) beginBarrier(id, cut uint64) *barrierRun {
	run := &barrierRun{id: id, cut: cut, got: map[uint64]bool{}, start: time.Now(), left: w.nOps,
		done: wire.SnapshotDone{ID: id, From: w.id, Epoch: w.epoch}}
	w.bar = run
	w.barDone = max(w.barDone, id-1)
	w.barCut = cut
	for _, t := range w.tasks {
		t.snapped, t.flushNow = false, false
		for i := t.head; i < len(t.q) && run.bad == ""; i++ {
			if after(t.q[i].Input, cut) {
				run.bad = fmt.Sprintf("operator %d had a record of input %d queued before the first barrier of cut %d", t.op, t.q[i].Input&(1<<56-1)-1, cut)
			}
		}
	}
	return run
}

// abandon stops aligning run (w.mu held): the records parked behind its
// barriers are queued.
func (w *Worker) abandon(run *barrierRun) {
	for _, t := range w.tasks {
		w.unpark(t)
		t.snapped, t.flushNow = false, false
	}
	w.bar = nil
	w.barDone = max(w.barDone, run.id)
	w.logf("checkpoint %d: abandoned", run.id)
}

// unpark queues t's parked records in arrival order (w.mu held).
func (w *Worker) unpark(t *task) {
	if len(t.parked) == 0 {
		return
	}
	for _, r := range t.parked {
		t.push(r)
	}
	w.parkedN -= len(t.parked)
	clear(t.parked)
	t.parked = t.parked[:0]
	w.wakeAges()
	if w.idle > 0 {
		w.work.Broadcast()
	}
}

// park keeps r back if its task is aligning a checkpoint whose cut r is
// not in, and notes a record of the checkpoint that reaches a task after
// its snapshot (w.mu held). It reports whether r was parked.
func (w *Worker) park(t *task, r rec) bool {
	run := w.bar
	if run == nil {
		return false
	}
	late := !after(r.Input, run.cut)
	if t.snapped {
		if late && run.bad == "" {
			run.bad = fmt.Sprintf("a record of input %d before the cut reached operator %d after its snapshot", r.Input&(1<<56-1)-1, t.op)
		}
		return false
	}
	if late {
		return false
	}
	t.parked = append(t.parked, r)
	w.parkedN++
	return true
}

// aligned reports whether checkpoint run's barrier has arrived on every
// input channel of task t (w.mu held): the ingress (the planner's barrier,
// which also names the members), and for every upstream operator u the
// local channel (u's task here snapshotted) and the stream from every
// other member.
func (w *Worker) aligned(run *barrierRun, t *task) bool {
	if run.members == nil {
		return false
	}
	for _, u := range w.ups[t.op] {
		if !w.tasks[u].snapped {
			return false
		}
		for _, v := range run.ids {
			if v != w.id && !run.got[chanKey(v, uint16(u))] {
				return false
			}
		}
	}
	return true
}

// barrierStep snapshots every task that is aligned and has executed every
// record queued before its last barrier, in operator order (a snapshot
// forwards the barrier to the local downstream tasks, which may then be
// aligned), and ends this worker's part once every task has (w.mu held).
// The executors call it after each batch while a checkpoint is aligning.
func (w *Worker) barrierStep() {
	run := w.bar
	if run == nil {
		return
	}
	for progress := true; progress; {
		progress = false
		for _, t := range w.tasks {
			if t.snapped || !w.aligned(run, t) {
				continue
			}
			if t.len() > 0 || t.running {
				if !t.flushNow {
					// Dispatch what is left at once rather than at the
					// batching timer.
					t.flushNow = true
					if w.idle > 0 && !t.running {
						w.work.Signal()
					}
				}
				continue
			}
			w.snapshotTask(run, t)
			progress = true
		}
	}
	if run.left == 0 {
		w.finishBarrier(run)
	}
}

// snapshotTask copies task t's keyed state into Snapshot frames to the
// planner (the copy taken at this instant; the upload is the planner
// sender's), releases its parked records and forwards the barrier on every
// stream to a member (w.mu held; t is not running and has no queue).
func (w *Worker) snapshotTask(run *barrierRun, t *task) {
	t0 := time.Now()
	for k := range w.holds {
		if int(k>>8) == t.op && run.bad == "" {
			run.bad = fmt.Sprintf("operator %d key group %d is held by a migration", t.op, k&0xff)
		}
	}
	p := w.planner
	p.closeBatch()
	b := p.buf
	var sw wire.SnapshotWriter
	for g := range ops.KeyGroups {
		if w.owners[t.op][g] != w.id || len(t.state[g]) == 0 {
			continue
		}
		b = sw.Begin(b, run.id, w.id, uint16(t.op), uint16(g))
		start := len(b)
		run.done.Frames++
		for k, v := range t.state[g] { // order is irrelevant: the planner keeps a map
			if len(b)-start > snapshotLimit {
				b = sw.Finish(b)
				b = sw.Begin(b, run.id, w.id, uint16(t.op), uint16(g))
				start = len(b)
				run.done.Frames++
			}
			b = sw.Add(b, k, v)
			run.done.Keys++
			run.done.Bytes += uint64(8 + len(v))
		}
		b = sw.Finish(b)
	}
	p.buf = b
	p.wake()
	t.snapped, t.flushNow = true, false
	run.left--
	w.unpark(t)
	if len(w.downs[t.op]) > 0 {
		fb := wire.Barrier{ID: run.id, Cut: run.cut, Epoch: w.epoch, From: w.id, Op: uint16(t.op)}
		for _, v := range run.ids {
			if v == w.id {
				continue
			}
			if q := w.peers[v]; q != nil {
				q.frame(fb.Append)
			} else if run.bad == "" {
				run.bad = fmt.Sprintf("no stream to member %d", v)
			}
		}
	}
	now := time.Now()
	run.done.SnapNS += uint64(now.Sub(t0))
	run.done.AlignNS = max(run.done.AlignNS, uint64(t0.Sub(run.start)))
}

// finishBarrier ends this worker's part of a checkpoint (w.mu held): the
// completion weight returned so far goes to the planner first — every
// record of an input before the cut has executed here, so the planner has
// all of those inputs complete once every member's snapshot-done is in —
// then the snapshot-done.
func (w *Worker) finishBarrier(run *barrierRun) {
	w.flushDone()
	d := run.done
	if run.bad != "" {
		w.logf("checkpoint %d: %s; refused", run.id, run.bad)
		d = wire.SnapshotDone{ID: run.id, From: w.id, Epoch: run.done.Epoch, AlignNS: d.AlignNS, SnapNS: d.SnapNS}
	} else {
		d.OK = true
		w.stats.Snapshots++
	}
	w.planner.frame(d.Append)
	w.bar = nil
	w.barDone = max(w.barDone, run.id)
}

// resetBarrier drops the checkpoint being aligned and the parked records
// (a restore discards every request; w.mu held). It returns how many
// records it dropped.
func (w *Worker) resetBarrier() int {
	n := 0
	for _, t := range w.tasks {
		n += len(t.parked)
		clear(t.parked)
		t.parked = t.parked[:0]
		t.snapped, t.flushNow = false, false
	}
	w.parkedN = 0
	if w.bar != nil {
		w.barDone = max(w.barDone, w.bar.id)
		w.bar = nil
	}
	return n
}
