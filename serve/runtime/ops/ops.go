package ops

// KeyGroups is the number of key groups of every partitioned operator
// (Flink-style: key → key group → owner), so a migration plan is an exact
// list of moving key groups.
const KeyGroups = 128

// KeyGroup returns the key group of a key.
func KeyGroup(key uint64) int { return int(key % KeyGroups) }

// Record is one request addressed to an operator instance.
type Record struct {
	// Key partitions the record: the worker routes it to the owner of
	// KeyGroup(Key) and the operator's state for Key.
	Key uint64
	// Input is the id of the input (ingress event) the record descends
	// from; the planner tracks end-to-end latency by it.
	Input uint64
	// Seq is the per-key sequence number of that input (the ingress key),
	// for the exactly-once checker.
	Seq uint64
	// Payload is the operator-specific encoding (SenML JSON, text, CSV…).
	Payload []byte
}

// State is the keyed state an operator instance sees for the keys it owns.
// Values are opaque bytes so that a key group can be moved as bytes.
//
// Ownership: Put hands value to the store, which may keep it; the
// operators here never touch a slice after passing it to Put. The slice
// Get returns may be updated in place by the operator and then passed to
// Put for the same key (an operator never does so for another key), so a
// store must not share one value between keys or with a reader running
// at the same time (a migration snapshot is taken with executions
// drained).
type State interface {
	Get(key uint64) ([]byte, bool)
	Put(key uint64, value []byte)
	Delete(key uint64)
}

// Emitter receives the records an operator sends to its successors: to is
// the successor's operator index in the App. The payload is valid only
// during the call (as io.Writer's p): operators reuse their buffers, so an
// Emitter that queues a record must copy the payload.
type Emitter interface {
	Emit(to int, key uint64, payload []byte)
}

// Operator processes one record. It must not retain in.Payload or the
// slices it passes to Emit after returning (the worker may reuse them).
// An error drops the record and is counted; it never stops the worker.
type Operator interface {
	Process(in Record, st State, out Emitter) error
}

// Spec describes one operator of an application.
type Spec struct {
	Name     string
	Stateful bool
	// New returns a fresh instance (one per task instance on a worker).
	New func() Operator
}

// Source generates the application's input payloads: each call writes the
// next input's payload into buf[:0] and returns it with its key. It is
// deterministic given the seed it was made with.
type Source interface {
	Next(buf []byte) (key uint64, payload []byte)
}

// App is a runnable application.
type App struct {
	Name      string
	Operators []Spec
	// Edges are the DAG's chained requests (from, to), operator indices.
	Edges [][2]int
	// NewSource returns the input generator for a seed.
	NewSource func(seed uint64) Source
}
