package worker

import (
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// barrierWorker runs a word-count worker (ID 0, every key group, member 1
// owning nothing) against a scripted planner and waits for its first
// placement.
func barrierWorker(t *testing.T, ctx context.Context) (*Worker, chan<- []byte, <-chan frame) {
	t.Helper()
	app := runtime.WordCount()
	addr, out, in := scriptedPlanner(t, ctx, len(app.Operators))
	w := placedWorker(t, ctx, Config{ID: wire.NoID, App: app, Planner: addr, Interval: -1})
	if f := <-in; f.k != wire.KindMigrated {
		t.Fatalf("%v, want the first placement's report", f.k)
	}
	return w, out, in
}

func nextFrame(t *testing.T, in <-chan frame) frame {
	t.Helper()
	select {
	case f := <-in:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("the worker sent nothing")
	}
	return frame{}
}

// collectSnapshot reads snapshot frames up to the snapshot-done and
// returns the counts of operator 1 (word count's counter).
func collectSnapshot(t *testing.T, in <-chan frame, id uint64) map[uint64]uint64 {
	t.Helper()
	got := map[uint64]uint64{}
	for {
		f := nextFrame(t, in)
		switch f.k {
		case wire.KindSnapshot:
			s, err := wire.DecodeSnapshot(f.p)
			if err != nil || s.ID != id {
				t.Fatalf("snapshot %+v %v", s, err)
			}
			for i, k := range s.Keys {
				if s.Op == 1 {
					got[k] = binary.LittleEndian.Uint64(s.Values[i])
				}
			}
		case wire.KindSnapshotDone:
			d, err := wire.DecodeSnapshotDone(f.p)
			if err != nil || !d.OK || d.ID != id {
				t.Fatalf("snapshot-done %+v %v", d, err)
			}
			return got
		default:
			t.Fatalf("%v during a checkpoint", f.k)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBarrierAlignment: the counter task has two input channels, the
// local splitter and peer 1's splitter. The planner's barrier reaches the
// splitter first, which snapshots and then splits a line of an input
// after the cut: its words reach the counter on the fast, local channel
// before peer 1's barrier, and must wait (alignment) — while a word of an
// input before the cut that arrives afterwards on the slow channel, before
// peer 1's barrier, must be in the snapshot. Without alignment the
// snapshot would hold the later input's words; snapshotting at the first
// barrier would miss peer 1's word.
func TestBarrierAlignment(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, out, in := barrierWorker(t, ctx)
	early, post, slow := runtime.WordKey([]byte("early")), runtime.WordKey([]byte("post")), runtime.WordKey([]byte("slow"))
	// Input 2 (Input field 3) is before the cut 10, input 10 (field 11) at it.
	var b []byte
	b = (&wire.Batch{From: wire.NoID, Epoch: 1, Records: []wire.Record{{Op: 0, Key: 1, Input: 3, Payload: []byte("early")}}}).Append(b)
	b = (&wire.Barrier{ID: 1, Cut: 10, Epoch: 1, From: wire.NoID, Op: wire.NoOp, Members: []uint32{0, 1}}).Append(b)
	b = (&wire.Batch{From: wire.NoID, Epoch: 1, Records: []wire.Record{{Op: 0, Key: 2, Input: 11, Payload: []byte("post post")}}}).Append(b)
	out <- b
	// early split + early counted + the later line split (whose words
	// are routed to the counter in the same critical section).
	waitExecuted(t, w, 3)
	if err := w.onBatch(1, wire.Batch{From: 1, Epoch: 1, Records: []wire.Record{{Op: 1, Key: slow, Input: 5}}}); err != nil {
		t.Fatal(err)
	}
	waitExecuted(t, w, 4)
	w.mu.Lock()
	aligning := w.bar != nil && w.tasks[0].snapped && !w.tasks[1].snapped
	w.mu.Unlock()
	if !aligning {
		t.Fatal("the counter snapshotted before peer 1's barrier")
	}
	if err := w.onBarrier(1, wire.Barrier{ID: 1, Cut: 10, Epoch: 1, From: 1, Op: 0}); err != nil {
		t.Fatal(err)
	}
	got := collectSnapshot(t, in, 1)
	if len(got) != 2 || got[early] != 1 || got[slow] != 1 || got[post] != 0 {
		t.Fatalf("snapshot of the counter %v, want early 1 and slow 1 only (early %d, slow %d, post %d)", got, early, slow, post)
	}
	// The parked words run after the snapshot.
	waitExecuted(t, w, 6)
	if st := w.StateOf(1); binary.LittleEndian.Uint64(st[post]) != 2 {
		t.Fatalf("after the checkpoint: post counted %d, want 2", binary.LittleEndian.Uint64(st[post]))
	}
}

// barState is what a refused barrier must not change.
type barState struct {
	active          bool
	id, cut         uint64
	got             int
	members         bool
	done, lastCut   uint64
	snaps, late     uint64
	snapped, parked int
}

func stateOfBarriers(w *Worker) barState {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := barState{done: w.barDone, lastCut: w.barCut, snaps: w.stats.Snapshots, late: w.stats.LateBarriers}
	if r := w.bar; r != nil {
		s.active, s.id, s.cut, s.got, s.members = true, r.id, r.cut, len(r.got), r.members != nil
	}
	for _, t := range w.tasks {
		if t.snapped {
			s.snapped++
		}
		s.parked += len(t.parked)
	}
	return s
}

// TestBadBarriers: barriers that do not fit (forged sender, a sender not
// in the membership or not taking part, an operator that feeds nothing,
// another epoch, a checkpoint whose cut disagrees or goes back, a planner
// barrier that leaves this worker out or names a stranger, a repeat, a
// truncated frame) are refused with an error and change nothing; a late
// barrier of a discarded checkpoint is ignored; an abort releases the
// parked records.
func TestBadBarriers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, out, in := barrierWorker(t, ctx)
	pb := func(id, cut uint64, members ...uint32) wire.Barrier {
		return wire.Barrier{ID: id, Cut: cut, Epoch: 1, From: wire.NoID, Op: wire.NoOp, Members: members}
	}
	peer := func(id, cut uint64) wire.Barrier { return wire.Barrier{ID: id, Cut: cut, Epoch: 1, From: 1, Op: 0} }
	// Checkpoint 1 with cut 10 completes (peer 1 takes part).
	if err := w.onBarrier(wire.NoID, pb(1, 10, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.onBarrier(1, peer(1, 10)); err != nil {
		t.Fatal(err)
	}
	collectSnapshot(t, in, 1)
	// Checkpoint 2 (cut 20) in progress with peer 1 left out.
	if err := w.onBarrier(wire.NoID, pb(2, 20, 0)); err != nil {
		t.Fatal(err)
	}
	// Checkpoint 2 finished at once (no peer); checkpoint 3 with both.
	collectSnapshot(t, in, 2)
	if err := w.onBarrier(wire.NoID, pb(3, 30, 0, 1)); err != nil {
		t.Fatal(err)
	}
	before := stateOfBarriers(w)
	if !before.active || before.id != 3 || before.snapped != 1 {
		t.Fatalf("checkpoint 3: %+v", before)
	}
	otherEpoch := peer(3, 30)
	otherEpoch.Epoch = 2
	sink := peer(3, 30)
	sink.Op = 1
	for name, c := range map[string]struct {
		from uint32
		b    wire.Barrier
	}{
		"forged sender":              {1, wire.Barrier{ID: 3, Cut: 30, Epoch: 1, From: 0, Op: 0}},
		"not a member":               {5, wire.Barrier{ID: 3, Cut: 30, Epoch: 1, From: 5, Op: 0}},
		"from itself":                {0, wire.Barrier{ID: 3, Cut: 30, Epoch: 1, From: 0, Op: 0}},
		"operator feeding nothing":   {1, sink},
		"operator out of range":      {1, wire.Barrier{ID: 3, Cut: 30, Epoch: 1, From: 1, Op: 9}},
		"another epoch":              {1, otherEpoch},
		"cut disagrees":              {1, peer(3, 31)},
		"cut goes back":              {1, peer(4, 25)},
		"planner's repeated":         {wire.NoID, pb(3, 30, 0, 1)},
		"planner's leaves it out":    {wire.NoID, pb(4, 40, 1)},
		"planner's names stranger":   {wire.NoID, pb(4, 40, 0, 1, 7)},
		"planner's cut goes back":    {wire.NoID, pb(4, 29, 0, 1)},
		"planner's of another epoch": {wire.NoID, wire.Barrier{ID: 4, Cut: 40, Epoch: 0, From: wire.NoID, Op: wire.NoOp, Members: []uint32{0, 1}}},
	} {
		if err := w.onBarrier(c.from, c.b); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if s := stateOfBarriers(w); s != before {
			t.Fatalf("%s: state %+v, was %+v", name, s, before)
		}
	}
	// A peer left out of checkpoint 2 sends its barrier late: not a
	// participant now either way, and checkpoint 2 is over: ignored.
	if err := w.onBarrier(1, peer(2, 20)); err != nil {
		t.Fatal(err)
	}
	if s := stateOfBarriers(w); s.late != before.late+1 {
		t.Fatalf("late barrier: %+v", s)
	}
	before = stateOfBarriers(w)
	// A truncated barrier on the planner's stream is refused.
	refused := w.Stats().Refused
	f := (&wire.Barrier{ID: 4, Cut: 40, Epoch: 1, From: wire.NoID, Op: wire.NoOp, Members: []uint32{0, 1}}).Append(nil)
	f = f[:len(f)-2]
	binary.LittleEndian.PutUint32(f, uint32(len(f)-4))
	out <- f
	waitFor(t, "the truncated barrier's refusal", func() bool { return w.Stats().Refused > refused })
	if s := stateOfBarriers(w); s != before {
		t.Fatalf("truncated barrier: state %+v, was %+v", s, before)
	}
	// A record of an input after the cut parks; the abort releases it and
	// late barriers of checkpoint 3 are then ignored.
	executed := w.Stats().Executed
	if err := w.onBatch(1, wire.Batch{From: 1, Epoch: 1, Records: []wire.Record{{Op: 1, Key: 3, Input: 31}}}); err != nil {
		t.Fatal(err)
	}
	if s := stateOfBarriers(w); s.parked != 1 {
		t.Fatalf("record after the cut: %+v, want parked", s)
	}
	out <- (&wire.Abort{ID: 3}).Append(nil)
	waitExecuted(t, w, executed+1)
	if err := w.onBarrier(1, peer(3, 30)); err != nil {
		t.Fatal(err)
	}
	if s := stateOfBarriers(w); s.active || s.done != 3 || s.parked != 0 || s.late != before.late+1 {
		t.Fatalf("after the abort: %+v", s)
	}
}

// TestPlacementEndsAlignment: a placement that reaches a worker still
// aligning a checkpoint (one the planner discarded: it never reconfigures
// during a checkpoint) ends the alignment — the parked record runs, no
// snapshot-done follows — and that checkpoint's late barriers are then
// ignored.
func TestPlacementEndsAlignment(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, out, in := barrierWorker(t, ctx)
	var b []byte
	b = (&wire.Barrier{ID: 1, Cut: 10, Epoch: 1, From: wire.NoID, Op: wire.NoOp, Members: []uint32{0, 1}}).Append(b)
	b = (&wire.Batch{From: wire.NoID, Epoch: 1, Records: []wire.Record{{Op: 1, Key: 3, Input: 11}}}).Append(b)
	out <- b
	waitFor(t, "the record to park", func() bool { return stateOfBarriers(w).parked == 1 })
	if s := w.Stats(); s.Executed != 0 {
		t.Fatalf("executed %d records while aligning", s.Executed)
	}
	members := []wire.Member{{ID: 0, Addr: "x"}, {ID: 1, Addr: "127.0.0.1:1"}}
	out <- (&wire.Placement{Epoch: 2, Members: members, Owners: make([][wire.KeyGroups]uint32, 2)}).Append(nil)
	waitExecuted(t, w, 1)
	if s := stateOfBarriers(w); s.active || s.parked != 0 || s.done != 1 || s.snaps != 0 {
		t.Fatalf("after the placement: %+v", s)
	}
	if err := w.onBarrier(1, wire.Barrier{ID: 1, Cut: 10, Epoch: 1, From: 1, Op: 0}); err != nil {
		t.Fatal(err)
	}
	if s := stateOfBarriers(w); s.active || s.late != 1 {
		t.Fatalf("late barrier: %+v", s)
	}
	select {
	case f := <-in:
		if f.k == wire.KindSnapshotDone {
			t.Fatal("a snapshot-done for the abandoned checkpoint")
		}
	default:
	}
}

// BenchmarkBarrierSnapshot measures one task's snapshot with barriers —
// the copy of 40,000 keys (8-byte values, all 128 key groups) into
// Snapshot frames, taken under the worker's lock — and reports its mean in
// ms (the figure CheckpointStat.SnapshotMS adds up on a busy host).
func BenchmarkBarrierSnapshot(b *testing.B) {
	const keys = 40_000
	w, err := New(Config{ID: 0, App: kvApp, Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	w.owners = make([][ops.KeyGroups]uint32, 1)
	w.members = map[uint32]string{0: "local"}
	w.epoch = 1
	var v [8]byte
	for k := range uint64(keys) {
		binary.LittleEndian.PutUint64(v[:], k)
		w.tasks[0].state[ops.KeyGroup(k)][k] = append([]byte(nil), v[:]...)
	}
	var total time.Duration
	n := uint64(0)
	for b.Loop() {
		n++
		w.mu.Lock()
		run := w.beginBarrier(n, n)
		run.ids, run.members = []uint32{0}, map[uint32]bool{0: true}
		w.snapshotTask(run, w.tasks[0])
		if run.done.Keys != keys {
			b.Fatalf("snapshot of %d keys, want %d", run.done.Keys, keys)
		}
		total += time.Duration(run.done.SnapNS)
		w.planner.buf = w.planner.buf[:0]
		w.bar = nil
		w.mu.Unlock()
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(n), "snapshot-ms")
}
