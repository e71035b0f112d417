package wire

// The checkpoint messages (see package planner, "Checkpoints"). Without
// barriers the planner asks every worker for a snapshot with Checkpoint;
// with barriers it injects a Barrier into the ingress, workers forward
// Barriers to their peers as their tasks snapshot, and Abort discards a
// checkpoint in progress. Either way each worker answers
// with one or more Snapshot frames per key group it owns whose state is not
// empty, then one SnapshotDone. On a failover the planner sends each live
// worker a Restore, the Snapshot frames of the key groups the worker owns
// in the next placement (From = NoID), then that Placement (without moves).

// Checkpoint asks a worker for a snapshot of its keyed state for checkpoint
// ID, taken under placement epoch Epoch.
type Checkpoint struct {
	ID    uint64
	Epoch uint64
}

// Append appends the frame.
func (m *Checkpoint) Append(b []byte) []byte {
	b, at := begin(b, KindCheckpoint)
	b = u64(b, m.ID)
	b = u64(b, m.Epoch)
	return end(b, at)
}

// DecodeCheckpoint parses a checkpoint payload.
func DecodeCheckpoint(p []byte) (Checkpoint, error) {
	d := dec{b: p, what: "checkpoint"}
	m := Checkpoint{ID: d.u64("id"), Epoch: d.u64("epoch")}
	return m, d.done()
}

// Snapshot is (part of) one key group's keyed state in checkpoint ID: From
// is the worker that took it, or NoID when the planner sends it back on a
// restore. A key group larger than a frame is split over several Snapshot
// frames; their keys are disjoint.
type Snapshot struct {
	ID     uint64
	From   uint32
	Op     uint16
	KG     uint16
	Keys   []uint64
	Values [][]byte
}

// Append appends the frame.
func (m *Snapshot) Append(b []byte) []byte {
	var w SnapshotWriter
	b = w.Begin(b, m.ID, m.From, m.Op, m.KG)
	for i, k := range m.Keys {
		b = w.Add(b, k, m.Values[i])
	}
	return w.Finish(b)
}

// SnapshotWriter builds a Snapshot frame key by key: Begin, any number of
// Add, Finish.
type SnapshotWriter struct {
	at, countAt int
	n           uint32
}

// Begin starts a snapshot frame at the end of b.
func (w *SnapshotWriter) Begin(b []byte, id uint64, from uint32, op, kg uint16) []byte {
	b, w.at = begin(b, KindSnapshot)
	b = u64(b, id)
	b = u32(b, from)
	b = u16(b, op)
	b = u16(b, kg)
	w.countAt, w.n = len(b), 0
	return u32(b, 0)
}

// Add appends one key and its value.
func (w *SnapshotWriter) Add(b []byte, key uint64, value []byte) []byte {
	w.n++
	b = u64(b, key)
	return bytesField(b, value)
}

// Finish patches the key count and the frame length.
func (w *SnapshotWriter) Finish(b []byte) []byte {
	putU32(b[w.countAt:], w.n)
	return end(b, w.at)
}

// DecodeSnapshot parses a snapshot payload: every key must be in the key
// group, and no key may repeat.
func DecodeSnapshot(p []byte) (Snapshot, error) {
	d := dec{b: p, what: "snapshot"}
	m := Snapshot{ID: d.u64("id"), From: d.u32("from"), Op: d.u16("operator"), KG: d.u16("key group")}
	if d.err == nil && (m.KG >= KeyGroups || int(m.Op) >= MaxOps) {
		d.fail("operator %d key group %d out of range", m.Op, m.KG)
	}
	n := d.count("keys", 12, MaxFrame/12)
	if n > 0 {
		m.Keys = make([]uint64, 0, n)
		m.Values = make([][]byte, 0, n)
	}
	seen := make(map[uint64]bool, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.u64("key")
		switch {
		case d.err != nil:
		case int(k%KeyGroups) != int(m.KG):
			d.fail("key %d is not in key group %d", k, m.KG)
		case seen[k]:
			d.fail("key %d repeated", k)
		}
		seen[k] = true
		m.Keys = append(m.Keys, k)
		m.Values = append(m.Values, d.bytes("value"))
	}
	if err := d.done(); err != nil {
		return Snapshot{}, err
	}
	return m, nil
}

// SnapshotDone ends a worker's part of checkpoint ID: it sent Frames
// Snapshot frames holding Keys keys and Bytes bytes of state, taken at
// placement epoch Epoch. OK is false when the worker could not take a
// consistent snapshot (it was not at Epoch, or requests were still queued
// or held; with barriers, a record broke the cut): the planner then
// discards the checkpoint. AlignNS is the longest alignment of one of the
// worker's tasks (first barrier → snapshot; 0 without barriers), SnapNS
// the time spent copying its state.
type SnapshotDone struct {
	ID      uint64
	From    uint32
	Epoch   uint64
	OK      bool
	Frames  uint32
	Keys    uint64
	Bytes   uint64
	AlignNS uint64
	SnapNS  uint64
}

// Append appends the frame.
func (m *SnapshotDone) Append(b []byte) []byte {
	b, at := begin(b, KindSnapshotDone)
	b = u64(b, m.ID)
	b = u32(b, m.From)
	b = u64(b, m.Epoch)
	ok := byte(0)
	if m.OK {
		ok = 1
	}
	b = append(b, ok)
	b = u32(b, m.Frames)
	b = u64(b, m.Keys)
	b = u64(b, m.Bytes)
	b = u64(b, m.AlignNS)
	b = u64(b, m.SnapNS)
	return end(b, at)
}

// DecodeSnapshotDone parses a snapshot-done payload.
func DecodeSnapshotDone(p []byte) (SnapshotDone, error) {
	d := dec{b: p, what: "snapshot-done"}
	m := SnapshotDone{ID: d.u64("id"), From: d.u32("from"), Epoch: d.u64("epoch")}
	ok := d.u8("ok")
	if d.err == nil && ok > 1 {
		d.fail("ok flag %d, want 0 or 1", ok)
	}
	m.OK = ok == 1
	m.Frames, m.Keys, m.Bytes = d.u32("frames"), d.u64("keys"), d.u64("bytes")
	m.AlignNS, m.SnapNS = d.u64("align ns"), d.u64("snapshot ns")
	if d.err == nil && !m.OK && (m.Frames != 0 || m.Keys != 0 || m.Bytes != 0) {
		d.fail("a failed snapshot reports %d frames", m.Frames)
	}
	return m, d.done()
}

// Restore announces that the placement for Epoch, which follows on the
// same stream, restores checkpoint ID: the Frames Snapshot frames between
// this frame and that placement hold the checkpointed state of the key
// groups the receiver owns in it; every other key group restarts empty.
type Restore struct {
	Epoch  uint64
	ID     uint64
	Frames uint32
}

// Append appends the frame.
func (m *Restore) Append(b []byte) []byte {
	b, at := begin(b, KindRestore)
	b = u64(b, m.Epoch)
	b = u64(b, m.ID)
	b = u32(b, m.Frames)
	return end(b, at)
}

// DecodeRestore parses a restore payload.
func DecodeRestore(p []byte) (Restore, error) {
	d := dec{b: p, what: "restore"}
	m := Restore{Epoch: d.u64("epoch"), ID: d.u64("id"), Frames: d.u32("frames")}
	if d.err == nil && m.Epoch == 0 {
		d.fail("epoch 0")
	}
	return m, d.done()
}

// NoOp is the operator of a planner's Barrier (it comes from no operator).
const NoOp = ^uint16(0)

// Barrier is checkpoint ID's barrier in asynchronous barrier snapshotting
// (see package planner, "Checkpoints"): every input before Cut belongs to
// the checkpoint, none from Cut on. The planner injects it into the
// ingress stream of every worker taking part, after the last record of an
// input before Cut and before the first of a later one, with From = NoID,
// Op = NoOp and the participating workers (ascending) in Members. A worker
// sends it on the stream to every participating peer once its instance of
// operator Op has snapshotted (From is the worker, Members empty). Epoch is
// the sender's placement epoch.
type Barrier struct {
	ID      uint64
	Cut     uint64
	Epoch   uint64
	From    uint32
	Op      uint16
	Members []uint32
}

// Append appends the frame.
func (m *Barrier) Append(b []byte) []byte {
	b, at := begin(b, KindBarrier)
	b = u64(b, m.ID)
	b = u64(b, m.Cut)
	b = u64(b, m.Epoch)
	b = u32(b, m.From)
	b = u16(b, m.Op)
	b = u32(b, uint32(len(m.Members)))
	for _, id := range m.Members {
		b = u32(b, id)
	}
	return end(b, at)
}

// DecodeBarrier parses a barrier payload: ID ≥ 1; from the planner (From
// NoID) with Op NoOp and 1..MaxMembers ascending member IDs, from a worker
// with an operator below MaxOps and no members.
func DecodeBarrier(p []byte) (Barrier, error) {
	d := dec{b: p, what: "barrier"}
	m := Barrier{ID: d.u64("id"), Cut: d.u64("cut"), Epoch: d.u64("epoch"), From: d.u32("from"), Op: d.u16("operator")}
	n := d.count("members", 4, MaxMembers)
	planner := m.From == NoID
	switch {
	case d.err != nil:
	case m.ID == 0:
		d.fail("checkpoint id 0")
	case planner != (m.Op == NoOp):
		d.fail("from %d with operator %d: the planner's barrier has no operator, a worker's one", m.From, m.Op)
	case !planner && int(m.Op) >= MaxOps:
		d.fail("operator %d out of range", m.Op)
	case planner != (n > 0):
		d.fail("from %d with %d members: the planner's barrier lists the members, a worker's none", m.From, n)
	}
	if n > 0 {
		m.Members = make([]uint32, 0, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		id := d.u32("member")
		if d.err == nil && (id == NoID || i > 0 && id <= m.Members[i-1]) {
			d.fail("member %d reserved or not ascending", id)
		}
		m.Members = append(m.Members, id)
	}
	if err := d.done(); err != nil {
		return Barrier{}, err
	}
	return m, nil
}

// Abort tells a worker that checkpoint ID is discarded: it stops aligning
// it and ignores its barriers from then on.
type Abort struct{ ID uint64 }

// Append appends the frame.
func (m *Abort) Append(b []byte) []byte {
	b, at := begin(b, KindAbort)
	b = u64(b, m.ID)
	return end(b, at)
}

// DecodeAbort parses an abort payload.
func DecodeAbort(p []byte) (Abort, error) {
	d := dec{b: p, what: "abort"}
	m := Abort{ID: d.u64("id")}
	if d.err == nil && m.ID == 0 {
		d.fail("checkpoint id 0")
	}
	return m, d.done()
}
