// Package planner is the runtime's planner process: membership and
// heartbeats, the ingress fed by an open-loop load generator, exact
// end-to-end latency per input, per-second statistics (optionally written
// to Parquet), the placement controller (CLASP by default, or scale steps
// given in advance) and the hook for a vertical allocation controller.
//
// # Service
//
// A Planner runs one load and returns. A Service (service.go) is the
// long-running form: it keeps an authenticated HTTP control API open
// (control_api.go: loopback by default, the runtime's shared token as a
// bearer token) and runs one replay at a time, each a fresh Planner on the
// same worker address and provider, for a client such as `eval live
// -planner`: the client reads every control interval's report (the
// Allocator's per-task metrics and the TakeWindow latencies), sets
// allocations (vertical replays) or lets the placement controller run
// (horizontal), and may stop the replay. Requests are decoded strictly and
// checked whole before anything changes.
//
// # Ingress and latency
//
// The load generator is open-loop: input i has an intended send time fixed
// in advance (i/rate for a constant rate; for a trace, the inputs of trace
// point j are spread evenly over its TraceStep-long window at the point's
// rate), and latency is measured from that intended time to the input's
// completion, so an overloaded runtime cannot hide latency by sending late
// (coordinated omission counted). Inputs wait in per-worker outboxes (the
// planner queue) when the workers push back.
//
// An input completes when every chained descendant has executed. Each
// input starts with the completion weight 2^127 (wire.Total); workers
// return weight as records execute (see package worker), and the input is
// complete exactly when the returned weight reaches 2^127. Weight beyond
// that, or weight for an input already complete, counts as a duplicate.
//
// # Placement
//
// A placement gives every key group of every operator an owner. The
// planner turns worker shares (CLASP's φ_{o,w}, or even shares for a scale
// step) into key-group counts by largest remainder, keeping each group
// where it is when its owner still has room, diffs old and new owners into
// the exact moves, and broadcasts the placement with the next epoch. It
// then waits for every member's Migrated report; the planner duration is
// broadcast → last report. Workers scaled in stay members, owning nothing,
// for that epoch and are stopped after it. One reconfiguration runs at a
// time.
//
// # Failures
//
// A worker that misses Miss heartbeats is dead: its key groups go to the
// live workers (their state is lost and rebuilt by replay), and every input
// not yet complete is sent again with a new attempt number (completion
// weight of older attempts is ignored). Delivery is then at-least-once:
// replayed inputs may update state twice.
//
// Determinism: the inputs (keys, payloads, sequence numbers, intended
// times) are a function of the seed and the rate or trace; everything
// measured depends on the machine.
package planner
