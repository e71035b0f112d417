// Package planner is the runtime's planner process: membership and
// heartbeats, the ingress fed by an open-loop load generator, exact
// end-to-end latency per input, per-second statistics (optionally written
// to Parquet), the placement controller (CLASP by default, or scale steps
// given in advance) and the hook for a vertical allocation controller.
//
// # Shell and core
//
// The deciding part is package core, a deterministic state machine (the
// failure detector, the scheduler and the checkpoint coordinator) fed
// events with the time as a value and returning actions; it holds no
// goroutine, clock, lock or connection, and its behaviour is tested by
// scripts in virtual time (core/testdata). The Planner is its shell: it
// owns the listener's streams (one goroutine reading each, one writing
// its outbox), the load generator and the input log, the provider calls
// (made one at a time, in order), the placement and allocation
// controllers, and a Clock it is given (Config.Clock; Real wraps package
// time). It turns every frame, tick (every 10 ms), provider answer and
// controller decision into a core event under one mutex, with the input
// log's state, and performs the actions in order: frames to workers,
// routing the ingress, flushing, pausing or replaying inputs, starting or
// stopping workers, recording a checkpoint, answering a scale request.
// The core's times are the shell clock's since the run began.
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
// # Membership
//
// A worker's stream opens with its Hello (the shared token checked); a
// worker asking for no ID gets one no member has held in the run, live or
// dead, so a worker that rejoins after being declared dead (a partition
// that healed) is a new member; one asking for a live member's ID is
// refused, and a hello from a live member's address (that worker, come
// back on a new stream) makes the old member's stream count as cut — dead
// at the next tick — and is refused until then. The planner ends every
// stream it lets go with a Bye saying why (wire.Bye): refused (the reason
// in its text, never the token), dead (declared dead: what was still
// queued for it is dropped), left (scaled in), done (the run ended
// normally; Serve then waits up to a second for the streams to close). A
// worker exits on done and left, and rejoins on dead (package worker).
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
// A worker that misses Miss heartbeats (or whose stream ends) is dead at
// the core's next tick: its key groups go to the live workers. A tick that
// comes late (the planner's process not scheduled on a busy host) moves
// every worker's last beat on by its lateness, so a stall of the planner
// is not counted against the workers. Without checkpoints
// (Config.CheckpointInterval 0) their state is lost and rebuilt only by
// replay: every input not yet complete is sent again with a new attempt
// number (completion weight of older attempts is ignored). Delivery is
// then at-least-once: replayed inputs may update state twice, and the
// dead worker's state is gone (Result.StateLostGroups counts the key
// groups so lost; Result.Guarantee says "at-least-once").
//
// When every worker is dead, Config.Restart decides (after Flink's
// restart strategies; default fixed-delay, 3 attempts 1 s apart, with
// checkpoints, none without): a restart asks the provider for the
// workers and restores the last checkpoint on them (without checkpoints:
// empty state, every open input replayed), or the job fails: Serve
// returns ErrJobFailed and the Result says StatusFailed and why. A
// scale-in stops exactly the members the core drained (provider.Stopper).
// An input that can never complete (sent to no live owner, or before a
// worker died, and not replayed) counts as dropped (Result.Dropped, =
// Lost; a failed run); one still queued when the drain ends as
// unfinished (a starved run's backlog, StatusUnfinished).
//
// # Checkpoints
//
// With Config.CheckpointInterval > 0 the planner takes a consistent
// checkpoint of every key group's state every interval, and a failover
// restores the last complete one everywhere (a global rollback, as Flink
// does) so that no state is lost and none is applied twice. A checkpoint
// n covers a cut c_n of the input log: its state is exactly the effect of
// inputs 0..c_n−1, each of them once, and of no later input. There are
// two ways to cut (Config.CheckpointMode).
//
// Barriers (ModeBarrier, the default): asynchronous barrier snapshotting
// (Carbone et al., "Lightweight Asynchronous Snapshots for Distributed
// Dataflows", 2015, after Chandy and Lamport's snapshots, 1985), which
// never stops the ingress. The channels are those of the operator DAG
// laid over the workers: task o on worker x (the instance of operator o)
// has one input channel per upstream instance — for every edge u → o and
// every participating worker v, the records u's instance on v sends to o
// on x: a local enqueue when v = x, else carried by v's ordered stream to
// x (one HTTP/2 stream multiplexes every such channel from v to x) — plus,
// for a source operator, the planner's ingress stream. A fan-in such as
// ETL's Join aligns over every upstream operator's channels; a fan-out
// forwards its barrier on every outgoing stream.
//
//  1. The planner takes the cut c = the inputs generated so far (all sent:
//     nothing waits) and writes Barrier{n, c, members} into the ingress
//     stream of every participating worker (the placed live members),
//     after the last record of an input before c; later inputs follow it
//     at once.
//  2. A task aligns: it snapshots once checkpoint n's barrier has arrived
//     on all of its input channels and it has executed every record queued
//     before them. Records of inputs from c on that reach it before that
//     are parked (kept in arrival order, not executed). The input's index
//     travels in every record, so a record is classified by its input, not
//     by its position: one stream carries the channels of several
//     upstream operators (a fan-in), and one of them may send records of
//     later inputs before another's barrier; by position they would look
//     early. The position still bounds the wait: on every channel each
//     record of an input before c precedes the barrier, and each record of
//     a later input follows the first barrier of n on it, so a worker
//     knows c before it can see such a record.
//  3. The snapshot copies the task's key groups into Snapshot frames to
//     the planner at that instant (the upload is the stream's, in the
//     background), then queues the parked records and forwards the
//     barrier: on every stream to a participating peer, and locally to
//     the downstream tasks. The operator DAG has no cycle, so every task
//     aligns, in topological order.
//  4. A worker whose tasks have all snapshotted first returns the
//     completion weight it holds, then sends SnapshotDone. The checkpoint
//     is complete when every participant's has arrived; every input
//     before c is then complete too (each of its records executed before
//     its task's snapshot), which the planner checks.
//
// The cost: records of later inputs wait at a task while it aligns
// (CheckpointStat.AlignMS), and copying the state briefly holds the
// worker's lock (SnapshotMS); inputs keep flowing everywhere else. A
// worker refuses a barrier that does not fit — from a sender not in its
// membership or not taking part, of another epoch, of an operator that
// feeds nothing, whose cut disagrees with its checkpoint's or goes back, a
// repeat, or malformed — with an error and no change; barriers of a
// checkpoint it finished or discarded are ignored. A record of an input
// before the cut that reaches a task after its snapshot (which the
// argument above excludes) makes the worker answer OK = false.
//
// Pause (ModePause): the ingress is quiesced instead.
//
//  1. Stop the ingress: inputs keep being generated at their intended
//     times and logged, but are not sent. The cut c is the number of
//     inputs generated so far.
//  2. Wait until every input before c has completed. Completion weights
//     (above) make this exact: all their records everywhere have executed
//     and none is in flight, and no record of a later input exists. The
//     workers' state is then exactly the effect of inputs 0..c−1.
//  3. Send every worker a Checkpoint; each stops executions, checks that
//     it holds no request (else it answers OK = false), and sends the
//     state of every key group it owns, then a SnapshotDone.
//  4. When every worker has answered, the checkpoint (state by key group,
//     and c) replaces the previous one; the payloads of inputs before c
//     are dropped (they will never be replayed). The held inputs are sent
//     and the ingress resumes.
//
// The ingress pause (steps 1–4, Result.CheckpointMSMax) is that mode's
// cost: inputs due during it wait, and as latency counts from the
// intended time it shows in the latency figures.
//
// In both modes a worker's death, a refusal or Config.CheckpointTimeout
// discards the checkpoint in progress (the previous complete one stays;
// with barriers the participants are sent Abort, which makes them queue
// what they parked and ignore its late barriers); no checkpoint starts
// while a failover is pending. Before the first checkpoint completes, the
// checkpoint is the empty state covering no input. The run ends with a
// checkpoint of the final state (CheckpointState).
//
// Migrations and checkpoints take turns (the rule, in both modes): the
// core runs one reconfiguration at a time, a checkpoint from its start
// to its completion or discard, a migration from its broadcast to
// the last Migrated report, after which every worker has installed the
// epoch, received every peer's Mark and End, and released every held key
// group. So a barrier never crosses an epoch marker: the epoch is the
// same on every worker for a checkpoint's whole life, and a checkpoint
// sees no held key group or straggler (a worker that finds one answers OK
// = false). A migration waits for the checkpoint in progress (at most
// Config.CheckpointTimeout) and a checkpoint for the migration; a
// failover's restore instead discards the checkpoint in progress at once.
// A worker that receives a placement while still aligning a checkpoint
// (one the planner discarded) stops aligning it first.
//
// Snapshots live in the planner's memory (the last complete one), and
// with Config.Store also on disk (see "Planner restart"). A worker's
// death is what the in-memory one protects against, and its disk goes
// with it; the planner's own death needs the copy on disk.
//
// On a worker's death the planner marks it dead (discarding a checkpoint
// in progress), assigns the key groups to the live workers and sends each
// live worker a Restore, the checkpoint's state of the key groups it owns
// in the new placement, and that placement (without moves). A worker
// installing it stops executions, discards every request it holds (queued,
// held, early, in its send buffers) and every completion weight not yet
// returned, replaces the state of every key group by the checkpoint's, and
// from then on drops records stamped with an earlier epoch (sent before the
// sender restored). The planner then sends again, with a new attempt
// number, every input from c on: those still open and those that
// completed after the checkpoint, whose effects were rolled back on every
// worker. A rolled-back input's new completion is awaited (the run, and
// the next checkpoint, wait for it) but not counted or timed again.
//
// Why every worker rolls back, not only the dead worker's key groups: one
// input updates state in several key groups on several workers (word
// count: its key's group at the splitter, each word's group at the
// counter). Replaying an input that completed after the checkpoint to
// rebuild the dead worker's groups would apply it a second time to the
// surviving groups it touched; telling those apart would need a record of
// applied inputs per key group, which operator state does not carry.
//
// Guarantee: exactly-once state — after any number of worker failures
// (one at a time, the planner alive) every key group's state equals that
// of a failure-free run over the same inputs, and the inputs reach every
// keyed operator in per-key order without gaps or repeats (the failover
// tests check both against an oracle). Output is at-least-once: effects
// outside keyed state of a record executed after the checkpoint and
// before the failure (nothing in this runtime's applications) happen
// again on replay. The planner counts each input complete once.
//
// # Planner restart
//
// The planner's death ends its workers (the local provider's children
// get SIGKILL with it; a worker's planner stream ends and it exits) and,
// without a store, the job. With Config.Store (`serve planner` or `serve
// local -checkpoint-dir DIR`) every complete checkpoint is also written
// to a directory (package ckptstore: atomically, checksummed, the last N
// kept) by a background writer as it completes; a write that has not
// finished when the planner dies leaves the previous file, which is as
// good a restart point. With it goes the checkpoint's source offset, its
// cut c. The load generator is a replayable source, as a Kafka partition
// with an offset is: the inputs (keys, payloads, sequence numbers,
// intended times) are a function of the seed and the rate or trace alone
// (Job names what fixes them, and is recorded with each checkpoint).
//
// A new planner of the same job given the checkpoint (Config.Restore:
// `-restore DIR` reads the latest file of DIR, refusing a truncated,
// corrupt or foreign one, or another job's) regenerates inputs 0..c−1 and
// logs them as complete without sending them, starts fresh workers,
// places the application on them and restores the checkpoint's state on
// every worker (a Restore and the restore placement, as after a failover)
// before the load starts; the source then resumes at input c. Its
// intended time t_c is the load time the run resumes at: the run's load
// clock starts at t_c, so inputs c, c+1, … are sent at their intended
// times relative to the new start and the load ends at the same load
// time Duration. Checkpoint IDs go on from the restored one.
//
// Guarantee: exactly-once state — the final state of a restarted job
// equals a fault-free run's (every input before c is in the checkpoint
// once, every later one is processed once by the new workers; inputs the
// dead planner had sent after c were lost with its workers' state) — and
// at-least-once output: effects outside keyed state of inputs after c
// that the dead planner's workers executed happen again. Any complete
// checkpoint of the job is a valid restart point, so a restore from an
// older file also ends in the same state.
//
// Limits: the downtime does not count in the latency figures (the load
// clock resumes at t_c; a real source would hold a backlog); the inputs
// before c count as complete in the result, but their latencies died with
// the old planner (Result.Resumed); the workers of a dead planner are not
// adopted (a restart starts new ones, as Flink without its standby
// JobManager redeploys the job); the input log of inputs after c is
// rebuilt from the source, so a source that is not a function of the seed
// could not be restored; and the planner's Service (one replay at a time
// on request) does not persist.
//
// Determinism: the inputs (keys, payloads, sequence numbers, intended
// times) are a function of the seed and the rate or trace; a checkpoint
// file's bytes are a function of the checkpoint (ckptstore's canonical
// encoding), no clock or map order in them; everything measured depends
// on the machine.
package planner
