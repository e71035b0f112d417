package wire

import (
	"math"
	"math/bits"
)

// NoID is the worker ID of a Hello that asks the planner to assign one.
const NoID = ^uint32(0)

// MaxExp is the largest completion-weight exponent: a record of exponent e
// carries the weight 2^(MaxExp−e) of its input (see package planner).
const MaxExp = 127

// Hello opens a stream: a worker introduces itself to the planner (ID NoID
// asks for one) or to a peer; the planner answers with a Hello carrying the
// assigned ID.
type Hello struct {
	ID    uint32
	Epoch uint64
	Addr  string // the sender's listen address, host:port
	Token string // the shared token ("" when none is configured)
}

// Append appends the frame.
func (m *Hello) Append(b []byte) []byte {
	b, at := begin(b, KindHello)
	b = u32(b, m.ID)
	b = u64(b, m.Epoch)
	b = str(b, m.Addr)
	b = str(b, m.Token)
	return end(b, at)
}

// DecodeHello parses a hello payload.
func DecodeHello(p []byte) (Hello, error) {
	d := dec{b: p, what: "hello"}
	m := Hello{ID: d.u32("id"), Epoch: d.u64("epoch"), Addr: d.str("addr"), Token: d.str("token")}
	return m, d.done()
}

// Heartbeat is a worker's liveness beat to the planner.
type Heartbeat struct {
	From  uint32
	Epoch uint64
}

// Append appends the frame.
func (m *Heartbeat) Append(b []byte) []byte {
	b, at := begin(b, KindHeartbeat)
	b = u32(b, m.From)
	b = u64(b, m.Epoch)
	return end(b, at)
}

// DecodeHeartbeat parses a heartbeat payload.
func DecodeHeartbeat(p []byte) (Heartbeat, error) {
	d := dec{b: p, what: "heartbeat"}
	m := Heartbeat{From: d.u32("from"), Epoch: d.u64("epoch")}
	return m, d.done()
}

// Record is one request on the wire: the operator it is addressed to, its
// completion-weight exponent and the fields of ops.Record.
type Record struct {
	Op      uint16
	Exp     uint8
	Key     uint64
	Input   uint64
	Seq     uint64
	Payload []byte
}

// RecordOverhead is the encoded size of a record without its payload.
const RecordOverhead = 2 + 1 + 8 + 8 + 8 + 4

func appendRecord(b []byte, r *Record) []byte {
	b = u16(b, r.Op)
	b = append(b, r.Exp)
	b = u64(b, r.Key)
	b = u64(b, r.Input)
	b = u64(b, r.Seq)
	return bytesField(b, r.Payload)
}

func (d *dec) record(r *Record) {
	r.Op = d.u16("record operator")
	r.Exp = d.u8("record exponent")
	r.Key = d.u64("record key")
	r.Input = d.u64("record input")
	r.Seq = d.u64("record seq")
	r.Payload = d.bytes("record payload")
	if d.err == nil && r.Exp > MaxExp {
		d.fail("record exponent %d, want ≤ %d", r.Exp, MaxExp)
	}
}

// Batch carries records from one sender (a worker, or the planner's ingress
// with From = NoID) stamped with the sender's epoch.
type Batch struct {
	From    uint32
	Epoch   uint64
	Records []Record
}

// Append appends the frame.
func (m *Batch) Append(b []byte) []byte {
	var w BatchWriter
	b = w.Begin(b, m.From, m.Epoch)
	for i := range m.Records {
		b = w.Add(b, &m.Records[i])
	}
	return w.Finish(b)
}

// BatchWriter builds a batch frame record by record without knowing the
// count in advance (the remote-send buffers use it).
type BatchWriter struct {
	at, countAt int
	n           uint32
}

// Begin starts a batch frame at the end of b.
func (w *BatchWriter) Begin(b []byte, from uint32, epoch uint64) []byte {
	b, w.at = begin(b, KindBatch)
	b = u32(b, from)
	b = u64(b, epoch)
	w.countAt = len(b)
	w.n = 0
	return u32(b, 0)
}

// Add appends one record.
func (w *BatchWriter) Add(b []byte, r *Record) []byte {
	w.n++
	return appendRecord(b, r)
}

// Len is the number of records added since Begin.
func (w *BatchWriter) Len() int { return int(w.n) }

// Finish patches the count and the frame length.
func (w *BatchWriter) Finish(b []byte) []byte {
	putU32(b[w.countAt:], w.n)
	return end(b, w.at)
}

// DecodeBatch parses a batch payload, reusing recs' storage.
func DecodeBatch(p []byte, recs []Record) (Batch, error) {
	d := dec{b: p, what: "batch"}
	m := Batch{From: d.u32("from"), Epoch: d.u64("epoch")}
	n := d.count("records", RecordOverhead, MaxFrame/RecordOverhead)
	recs = recs[:0]
	for i := 0; i < n && d.err == nil; i++ {
		recs = append(recs, Record{})
		d.record(&recs[len(recs)-1])
	}
	m.Records = recs
	if err := d.done(); err != nil {
		return Batch{}, err
	}
	return m, nil
}

// TaskMetrics is one task's (operator instance's) counters over a report
// interval; Queue, Millicores and State* are current values.
type TaskMetrics struct {
	Arrived    uint64 // requests enqueued for the task (input rate × interval)
	Execs      uint64 // executions finished (throughput × interval)
	ExecNS     uint64 // wall time inside Process, summed
	LatencyNS  uint64 // enqueue → execution finished, summed over Execs
	CPUNS      uint64 // CPU time charged to the task's quota
	Queue      uint64 // requests waiting now
	Millicores uint32 // allocation now
	StateKeys  uint64
	StateBytes uint64
}

// EdgeMetrics counts the chained requests one worker sent on one edge.
type EdgeMetrics struct{ Local, Remote uint64 }

// Metrics is a worker's report (CLASP's Table 2 and the vertical
// controllers' per-task metrics) over IntervalS seconds.
type Metrics struct {
	From        uint32
	Epoch       uint64
	IntervalS   float64
	Queue       uint64 // requests waiting at the worker, all tasks
	RemoteDests uint32 // distinct remote destination workers in the interval
	LoadNS      uint64 // CPU time of the executions in the interval
	Tasks       []TaskMetrics
	Edges       []EdgeMetrics
}

// Append appends the frame.
func (m *Metrics) Append(b []byte) []byte {
	b, at := begin(b, KindMetrics)
	b = u32(b, m.From)
	b = u64(b, m.Epoch)
	b = f64(b, m.IntervalS)
	b = u64(b, m.Queue)
	b = u32(b, m.RemoteDests)
	b = u64(b, m.LoadNS)
	b = u32(b, uint32(len(m.Tasks)))
	for _, t := range m.Tasks {
		for _, v := range [...]uint64{t.Arrived, t.Execs, t.ExecNS, t.LatencyNS, t.CPUNS, t.Queue, uint64(t.Millicores), t.StateKeys, t.StateBytes} {
			b = u64(b, v)
		}
	}
	b = u32(b, uint32(len(m.Edges)))
	for _, e := range m.Edges {
		b = u64(b, e.Local)
		b = u64(b, e.Remote)
	}
	return end(b, at)
}

// DecodeMetrics parses a metrics payload.
func DecodeMetrics(p []byte) (Metrics, error) {
	d := dec{b: p, what: "metrics"}
	m := Metrics{From: d.u32("from"), Epoch: d.u64("epoch"), IntervalS: d.f64("interval"), Queue: d.u64("queue"), RemoteDests: d.u32("remote destinations"), LoadNS: d.u64("load")}
	if d.err == nil && m.IntervalS < 0 {
		d.fail("interval %v s, want ≥ 0", m.IntervalS)
	}
	n := d.count("tasks", 9*8, MaxOps)
	for i := 0; i < n && d.err == nil; i++ {
		var t TaskMetrics
		t.Arrived, t.Execs, t.ExecNS, t.LatencyNS, t.CPUNS, t.Queue = d.u64("arrived"), d.u64("execs"), d.u64("exec time"), d.u64("latency"), d.u64("cpu"), d.u64("task queue")
		mc := d.u64("millicores")
		if d.err == nil && mc > math.MaxUint32 {
			d.fail("millicores %d out of range", mc)
		}
		t.Millicores = uint32(mc)
		t.StateKeys, t.StateBytes = d.u64("state keys"), d.u64("state bytes")
		m.Tasks = append(m.Tasks, t)
	}
	n = d.count("edges", 16, MaxOps*MaxOps)
	for i := 0; i < n && d.err == nil; i++ {
		m.Edges = append(m.Edges, EdgeMetrics{Local: d.u64("edge local"), Remote: d.u64("edge remote")})
	}
	if err := d.done(); err != nil {
		return Metrics{}, err
	}
	return m, nil
}

// Alloc sets the millicores of each task (indexed by operator) on the
// receiving worker.
type Alloc struct {
	Epoch      uint64
	Millicores []uint32
}

// MaxMillicores bounds one task's allocation (1,024 cores).
const MaxMillicores = 1 << 20

// Append appends the frame.
func (m *Alloc) Append(b []byte) []byte {
	b, at := begin(b, KindAlloc)
	b = u64(b, m.Epoch)
	b = u32(b, uint32(len(m.Millicores)))
	for _, v := range m.Millicores {
		b = u32(b, v)
	}
	return end(b, at)
}

// DecodeAlloc parses an allocation payload.
func DecodeAlloc(p []byte) (Alloc, error) {
	d := dec{b: p, what: "alloc"}
	m := Alloc{Epoch: d.u64("epoch")}
	n := d.count("tasks", 4, MaxOps)
	for i := 0; i < n && d.err == nil; i++ {
		v := d.u32("millicores")
		if d.err == nil && (v == 0 || v > MaxMillicores) {
			d.fail("task %d: %d millicores, want 1..%d", i, v, MaxMillicores)
		}
		m.Millicores = append(m.Millicores, v)
	}
	if err := d.done(); err != nil {
		return Alloc{}, err
	}
	return m, nil
}

// Member is one worker of a placement.
type Member struct {
	ID   uint32
	Addr string
}

// Move is one key group of one operator changing owner.
type Move struct {
	Op       uint16
	KG       uint16
	From, To uint32
}

// Placement is the planner's configuration for an epoch: the members, the
// owner of every key group of every operator (Owners[op][kg] is a member
// ID) and the exact moves from the previous epoch's owners.
type Placement struct {
	Epoch   uint64
	Members []Member
	Owners  [][KeyGroups]uint32
	Moves   []Move
}

// Append appends the frame.
func (m *Placement) Append(b []byte) []byte {
	b, at := begin(b, KindPlacement)
	b = u64(b, m.Epoch)
	b = u32(b, uint32(len(m.Members)))
	for _, w := range m.Members {
		b = u32(b, w.ID)
		b = str(b, w.Addr)
	}
	b = u32(b, uint32(len(m.Owners)))
	for i := range m.Owners {
		for _, o := range m.Owners[i] {
			b = u32(b, o)
		}
	}
	b = u32(b, uint32(len(m.Moves)))
	for _, v := range m.Moves {
		b = u16(b, v.Op)
		b = u16(b, v.KG)
		b = u32(b, v.From)
		b = u32(b, v.To)
	}
	return end(b, at)
}

// DecodePlacement parses a placement payload and checks it: unique member
// IDs, owners and move endpoints that are members, operators and key
// groups in range, and each move's destination the operator's new owner.
func DecodePlacement(p []byte) (Placement, error) {
	d := dec{b: p, what: "placement"}
	m := Placement{Epoch: d.u64("epoch")}
	n := d.count("members", 6, MaxMembers)
	ids := make(map[uint32]bool, n)
	for i := 0; i < n && d.err == nil; i++ {
		w := Member{ID: d.u32("member id"), Addr: d.str("member addr")}
		if d.err == nil && (ids[w.ID] || w.ID == NoID) {
			d.fail("member id %d repeated or reserved", w.ID)
		}
		ids[w.ID] = true
		m.Members = append(m.Members, w)
	}
	n = d.count("operators", 4*KeyGroups, MaxOps)
	m.Owners = make([][KeyGroups]uint32, n)
	for i := 0; i < n && d.err == nil; i++ {
		for g := range KeyGroups {
			o := d.u32("owner")
			if d.err == nil && !ids[o] {
				d.fail("operator %d key group %d: owner %d is not a member", i, g, o)
			}
			m.Owners[i][g] = o
		}
	}
	n = d.count("moves", 12, len(m.Owners)*KeyGroups)
	for i := 0; i < n && d.err == nil; i++ {
		v := Move{Op: d.u16("move op"), KG: d.u16("move key group"), From: d.u32("move from"), To: d.u32("move to")}
		switch {
		case d.err != nil:
		case int(v.Op) >= len(m.Owners) || v.KG >= KeyGroups:
			d.fail("move %d: operator %d key group %d out of range", i, v.Op, v.KG)
		case v.From == v.To || m.Owners[v.Op][v.KG] != v.To:
			d.fail("move %d: operator %d key group %d from %d to %d, but its owner is %d", i, v.Op, v.KG, v.From, v.To, m.Owners[v.Op][v.KG])
		}
		m.Moves = append(m.Moves, v)
	}
	if err := d.done(); err != nil {
		return Placement{}, err
	}
	return m, nil
}

// State hands one key group of one operator to its new owner: its keyed
// state and the requests queued for it.
type State struct {
	Epoch  uint64
	From   uint32
	Op     uint16
	KG     uint16
	Keys   []uint64
	Values [][]byte
	Queued []Record
}

// Append appends the frame.
func (m *State) Append(b []byte) []byte {
	b, at := begin(b, KindState)
	b = u64(b, m.Epoch)
	b = u32(b, m.From)
	b = u16(b, m.Op)
	b = u16(b, m.KG)
	b = u32(b, uint32(len(m.Keys)))
	for i, k := range m.Keys {
		b = u64(b, k)
		b = bytesField(b, m.Values[i])
	}
	b = u32(b, uint32(len(m.Queued)))
	for i := range m.Queued {
		b = appendRecord(b, &m.Queued[i])
	}
	return end(b, at)
}

// DecodeState parses a state payload.
func DecodeState(p []byte) (State, error) {
	d := dec{b: p, what: "state"}
	m := State{Epoch: d.u64("epoch"), From: d.u32("from"), Op: d.u16("operator"), KG: d.u16("key group")}
	if d.err == nil && (m.KG >= KeyGroups || int(m.Op) >= MaxOps) {
		d.fail("operator %d key group %d out of range", m.Op, m.KG)
	}
	n := d.count("keys", 12, MaxFrame/12)
	if n > 0 {
		m.Keys = make([]uint64, 0, n)
		m.Values = make([][]byte, 0, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		k := d.u64("key")
		if d.err == nil && int(k%KeyGroups) != int(m.KG) {
			d.fail("key %d is not in key group %d", k, m.KG)
		}
		m.Keys = append(m.Keys, k)
		m.Values = append(m.Values, d.bytes("value"))
	}
	n = d.count("queued", RecordOverhead, MaxFrame/RecordOverhead)
	for i := 0; i < n && d.err == nil; i++ {
		m.Queued = append(m.Queued, Record{})
		d.record(&m.Queued[len(m.Queued)-1])
		if r := &m.Queued[len(m.Queued)-1]; d.err == nil && (r.Op != m.Op || int(r.Key%KeyGroups) != int(m.KG)) {
			d.fail("queued record for operator %d key %d is not in operator %d key group %d", r.Op, r.Key, m.Op, m.KG)
		}
	}
	if err := d.done(); err != nil {
		return State{}, err
	}
	return m, nil
}

// Mark tells a peer the sender switched to Epoch: no record stamped with an
// earlier epoch follows on this stream. End tells the new owner of key
// groups that the sender's handover for Epoch is complete.
type Mark struct {
	Epoch uint64
	From  uint32
}

// Append appends the frame as kind k (KindMark or KindEnd).
func (m *Mark) Append(b []byte, k Kind) []byte {
	b, at := begin(b, k)
	b = u64(b, m.Epoch)
	b = u32(b, m.From)
	return end(b, at)
}

// DecodeMark parses a mark or end payload.
func DecodeMark(p []byte) (Mark, error) {
	d := dec{b: p, what: "mark"}
	m := Mark{Epoch: d.u64("epoch"), From: d.u32("from")}
	return m, d.done()
}

// Weight is an unsigned 128-bit completion weight.
type Weight struct{ Hi, Lo uint64 }

// DoneEntry returns completion weight for one input.
type DoneEntry struct {
	Input uint64
	W     Weight
}

// Done returns the completion weight of executed records to the planner.
type Done struct {
	From    uint32
	Entries []DoneEntry
}

// Append appends the frame.
func (m *Done) Append(b []byte) []byte {
	b, at := begin(b, KindDone)
	b = u32(b, m.From)
	b = u32(b, uint32(len(m.Entries)))
	for _, e := range m.Entries {
		b = u64(b, e.Input)
		b = u64(b, e.W.Hi)
		b = u64(b, e.W.Lo)
	}
	return end(b, at)
}

// DecodeDone parses a done payload, reusing entries' storage.
func DecodeDone(p []byte, entries []DoneEntry) (Done, error) {
	d := dec{b: p, what: "done"}
	m := Done{From: d.u32("from")}
	n := d.count("entries", 24, MaxFrame/24)
	entries = entries[:0]
	for i := 0; i < n && d.err == nil; i++ {
		entries = append(entries, DoneEntry{Input: d.u64("input"), W: Weight{Hi: d.u64("weight"), Lo: d.u64("weight")}})
	}
	m.Entries = entries
	if err := d.done(); err != nil {
		return Done{}, err
	}
	return m, nil
}

// Migrated reports that a worker finished its part of an epoch's migration.
type Migrated struct {
	From        uint32
	Epoch       uint64
	PauseNS     uint64 // executions stopped: drain + handing over the moving groups
	WaitNS      uint64 // placement received → last expected End received
	MovedGroups uint32 // key groups sent
	MovedKeys   uint64 // state keys sent
	MovedBytes  uint64 // state bytes sent
	MovedQueued uint64 // queued requests sent
}

// Append appends the frame.
func (m *Migrated) Append(b []byte) []byte {
	b, at := begin(b, KindMigrated)
	b = u32(b, m.From)
	b = u64(b, m.Epoch)
	b = u64(b, m.PauseNS)
	b = u64(b, m.WaitNS)
	b = u32(b, m.MovedGroups)
	b = u64(b, m.MovedKeys)
	b = u64(b, m.MovedBytes)
	b = u64(b, m.MovedQueued)
	return end(b, at)
}

// DecodeMigrated parses a migrated payload.
func DecodeMigrated(p []byte) (Migrated, error) {
	d := dec{b: p, what: "migrated"}
	m := Migrated{From: d.u32("from"), Epoch: d.u64("epoch"), PauseNS: d.u64("pause"), WaitNS: d.u64("wait"), MovedGroups: d.u32("groups"), MovedKeys: d.u64("keys"), MovedBytes: d.u64("bytes"), MovedQueued: d.u64("queued")}
	return m, d.done()
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// ExpWeight returns 2^(MaxExp−e), the completion weight of a record of
// exponent e ≤ MaxExp.
func ExpWeight(e uint8) Weight {
	s := MaxExp - uint(e)
	if s >= 64 {
		return Weight{Hi: 1 << (s - 64)}
	}
	return Weight{Lo: 1 << s}
}

// Total is the weight of a whole input, 2^MaxExp.
var Total = ExpWeight(0)

// Add returns a + b (mod 2^128) and whether it overflowed.
func (a Weight) Add(b Weight) (Weight, bool) {
	lo, c := bits.Add64(a.Lo, b.Lo, 0)
	hi, c2 := bits.Add64(a.Hi, b.Hi, c)
	return Weight{Hi: hi, Lo: lo}, c2 != 0
}

// Cmp compares a and b: −1, 0 or +1.
func (a Weight) Cmp(b Weight) int {
	switch {
	case a.Hi < b.Hi || (a.Hi == b.Hi && a.Lo < b.Lo):
		return -1
	case a == b:
		return 0
	}
	return 1
}

// Split divides the weight of a record of exponent e among k children:
// each child gets exponent e + ⌈log₂ k⌉ and the parent returns
// back = 2^(MaxExp−e) − k·2^(MaxExp−e−⌈log₂ k⌉) ≥ 0; with k = 0 it
// returns its whole weight. ok is false when the children's exponent would
// exceed MaxExp (the children must then be dropped and back is the whole
// weight). This is credit-recovery termination detection (Mattern 1989):
// weight is conserved, so an input's returned weight reaches Total exactly
// when every descendant has executed.
func Split(e uint8, k int) (childExp uint8, back Weight, ok bool) {
	whole := ExpWeight(e)
	if k <= 0 {
		return 0, whole, true
	}
	m := bits.Len(uint(k - 1)) // ⌈log₂ k⌉
	if int(e)+m > MaxExp {
		return 0, whole, false
	}
	ce := e + uint8(m)
	c := ExpWeight(ce)
	f := uint64(1)<<m - uint64(k)
	hi, lo := bits.Mul64(c.Lo, f)
	hi += c.Hi * f
	return ce, Weight{Hi: hi, Lo: lo}, true
}

// StateWriter builds a State frame entry by entry (the migration encodes
// straight from the state store): Begin, any number of AddKey, then
// Queued, any number of AddQueued, Finish.
type StateWriter struct {
	at, countAt int
	n           uint32
}

// Begin starts a state frame at the end of b.
func (w *StateWriter) Begin(b []byte, epoch uint64, from uint32, op, kg uint16) []byte {
	b, w.at = begin(b, KindState)
	b = u64(b, epoch)
	b = u32(b, from)
	b = u16(b, op)
	b = u16(b, kg)
	w.countAt, w.n = len(b), 0
	return u32(b, 0)
}

// AddKey appends one key and its value.
func (w *StateWriter) AddKey(b []byte, key uint64, value []byte) []byte {
	w.n++
	b = u64(b, key)
	return bytesField(b, value)
}

// Queued ends the keys and starts the queued records.
func (w *StateWriter) Queued(b []byte) []byte {
	putU32(b[w.countAt:], w.n)
	w.countAt, w.n = len(b), 0
	return u32(b, 0)
}

// AddQueued appends one queued record.
func (w *StateWriter) AddQueued(b []byte, r *Record) []byte {
	w.n++
	return appendRecord(b, r)
}

// Finish patches the record count and the frame length.
func (w *StateWriter) Finish(b []byte) []byte {
	putU32(b[w.countAt:], w.n)
	return end(b, w.at)
}
