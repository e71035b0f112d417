// Package worker is the runtime's worker process: it executes the operator
// instances (tasks) that the planner's placement gives it, dispatches every
// chained request itself — to a local task by an in-memory enqueue, to
// another worker over one HTTP/2 stream per peer (package transport) in
// batches — keeps each stateful task's keyed state by key group, enforces
// each task's CPU allocation (package cfs), reports its metrics to the
// planner every second and takes part in barrier-free migrations.
//
// # Execution
//
// Each task has one FIFO queue. An executor pool of Config.Slots goroutines
// takes work from the queues with timer batching (CLASP's runtime): a
// queue is dispatched when it holds Config.Batch requests or its oldest
// request is Config.Interval old, checked every Config.Check (0: at once).
// A task runs on at most one slot at a time, so a task's records execute in
// queue order and its state needs no lock; different tasks run in parallel.
// A batch runs inside the task's cfs.Quota.Run, or, with Config.Hosts
// (serve worker -cpu-enforce kernel), in the task's own process under a
// kernel CPU quota (package kcfs; apps without keyed state only). The
// requests a worker holds
// (queued, held for a migration or executing) are capped by
// Config.MaxInFlight: a stream reader that would exceed it stops reading,
// and HTTP/2 flow control then stops the sender.
//
// # Completion weights
//
// The planner measures end-to-end latency exactly: an input's first record
// carries the weight 2^127, written as the exponent e = 0 of 2^(127−e). A
// record of exponent e that emits k > 0 children gives each the exponent
// e + ⌈log₂ k⌉ and returns the rest, 2^(127−e) − k·2^(127−e−⌈log₂ k⌉) ≥ 0,
// to the planner; a record with no children returns all of its weight.
// Weight is conserved and every record in flight holds a positive weight,
// so the returned weight of an input reaches 2^127 exactly when every
// descendant has executed, whatever order the notices arrive in (Mattern's
// credit-recovery termination detection, Mattern 1989). A fan-out that would
// need e > 127 drops the children and is counted (WeightOverflow).
//
// # Migration (CLASP's protocol, no global barrier)
//
// On a placement for epoch E with moves, a worker stops starting
// executions, waits for the running ones (drain), takes the keyed state
// and the queued requests of every key group it gives away, resumes, and
// sends them to the new owners named by the moves. It then sends a Mark
// for E to every peer, forwards to their new owners any records that
// arrive later addressed under E−1 (stragglers), and once every peer's Mark
// has arrived (no straggler can follow) sends End for E to each new owner.
// A worker receiving key groups holds the records that reach it for them
// until the previous owner's End arrives, then queues the previous owner's
// records first and the others after, so per-sender order is kept. The
// planner never relays data. The pause reported is the time executions
// were stopped; the wait is placement received → last End received.
//
// # Checkpoints and restores
//
// With barriers (the planner's default; barrier.go) a checkpoint is taken
// task by task while records flow: the planner's Barrier arrives in the
// ingress stream and names the checkpoint's cut and members; a task
// aligns — it snapshots once the barrier has arrived on each of its input
// channels (the ingress for a source; for every upstream operator, its
// task here and every other member's stream) and its queue is empty, and
// meanwhile parks the records of inputs from the cut on — then encodes
// its key groups into Snapshot frames to the planner, queues what it
// parked and sends a Barrier for its operator on the stream to every
// member. When every task has, the worker flushes its completion weights
// and sends SnapshotDone. An Abort, a newer checkpoint's barrier or a
// placement ends an alignment: the parked records are queued.
//
// Without barriers, on the planner's Checkpoint the worker stops
// executions and, if it holds no request (the planner asks only when
// nothing is in flight), sends the state of every key group it owns to
// the planner (wire.Snapshot frames, then wire.SnapshotDone); otherwise
// it answers OK = false. A Restore, the
// Snapshot frames it announces and the following Placement are a global
// rollback: executions stop, every request held and every completion
// weight not yet returned are discarded, every key group's state becomes
// the checkpoint's (empty where the checkpoint has none or the worker does
// not own the group), the checkpoint being aligned is dropped with what
// it parked, the placement is installed without handovers, and
// records stamped with an earlier epoch are dropped from then on
// (Stats.Stale). A restore missing frames, with moves, or giving the
// worker a group it does not own is refused as a whole (see package
// planner, "Checkpoints").
//
// # Membership: joins, goodbyes and rejoins
//
// The worker's listener lives as long as Serve; its membership is a
// session: a join (dial, Hello, the planner's welcome), then the slots,
// the age check, the migrations, the monitor, the beats and the senders,
// all of which end with the session. The planner ends a member's stream
// with a Bye saying why (wire.Bye): done (the run is over) and left
// (scaled in) end Serve with nil; dead (the planner declared this worker
// dead — it missed heartbeats, say behind a partition that has since
// healed — and failed its key groups over) starts a new session as a new
// member. So does a stream that breaks or ends without a Bye: the planner
// died, or the link did (the planner declares the member dead, and, if it
// has not yet, a hello from the member's address makes it). A new member
// holds nothing of the old one: rejoin drops every request held, the
// keyed state, the completion weights, the placement, the peers and the
// membership, resets the tasks' allocations, and the hello asks for no ID,
// so the planner gives one no member held (package planner/core); frames
// of the old epochs still on their way are refused, by the peers (not a
// member) and here (a peer stream opened in an earlier session applies no
// frame: each is applied under peerMu's read lock with the session
// checked, and rejoin holds the write lock). A join that fails — the
// planner unreachable, the hello refused (a wrong token: the Bye says
// so), no welcome within Config.JoinTimeout — is logged to Config.Notices
// with its cause and retried after a backoff (Config.JoinBackoff,
// doubling, at most 5 s); after Config.JoinTries in a row Serve returns an
// error naming the planner, the cause, and the stream lost before them if
// one was.
//
// # Concurrency
//
// One mutex guards the queues, the placement and the counters; it is never
// held across a network write or an operator execution. Stream readers,
// peer senders, slots, the monitor and the migration each own a goroutine.
package worker
