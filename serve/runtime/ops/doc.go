// Package ops holds the runtime's operators, implemented for real, and the
// applications built from them (RIoTBench PRED and ETL, and the CLASP apps
// WC, SD, AA, PL, NWM, SYN). An application's topology is the one the
// simulator's profiles (package env) and the CLASP planner's apps (package
// clasp) describe; a test holds them equal (one documented exception:
// PRED's LinearRegression and BlockWindowAverage keep keyed state by taxi,
// which env's PRED profile does not model).
//
// The worker (package serve/runtime/worker) owns queues, placement, state
// stores and CPU limits; an operator only turns one record into zero or
// more records for its successors, reading and writing the keyed state of
// the record's key.
//
// Payloads: sources emit the applications' external formats (RIoTBench
// TAXI SenML JSON, text sentences, Intel lab readings, Yahoo benchmark
// JSON events, CSV transactions, sshd log lines); operators pass compact
// binary tuples between each other (codec.go). Every operator checks its
// input and returns an error (prefixed "ops: app/operator:") on a bad
// record, having changed no state and emitted nothing.
//
// Keys: an operator chooses the key of each record it emits by its
// successor's partitioning — word (WC), sensor (SD), ad and campaign (AA),
// item and category (PL), host (NWM), taxi (PRED), taxi × field and
// message id (ETL) — and keyed state is always the state of in.Key: a
// stateful operator refuses (with an error) a record whose Key is not the
// key its payload names, so a routing mistake cannot corrupt state. ETL's
// message id is Record.Input, so the worker must give every record the
// Input of the ingress input it descends from. Counters are uvarints, so
// a key group moves as bytes.
//
// Concurrency: every operator instance is safe for concurrent use by
// several executor slots. Stateless operators keep nothing between calls
// (scratch buffers come from a sync.Pool); TableInsert's in-memory table
// has a lock. Keyed state is read-modify-write: the worker must not run
// two records of the same key of one stateful operator at the same time
// (serialising by key group is enough).
//
// Determinism: NewSource(seed) draws from the rng stream
// rng.OpsSource+app, so a seed gives the same payload sequence; processing
// is a function of the record (payload, key, Input) and the key's state.
//
// Costs: costs.md beside this file lists each operator's measured CPU cost
// per record; regenerate it with
//
//	go test ./serve/runtime/ops -run TestWriteCosts -update
//
// and benchmark single operators with -bench 'Operator/<app>/<op>'.
package ops
