// Package core is the planner's deterministic core, in etcd-io/raft's
// shape: a state machine with no goroutine, clock, lock, socket or file,
// fed events with the current time as a value (Core.Step) and returning
// the actions for its shell (package planner) to perform, in order. The
// parts are split as Flink splits its JobManager, each testable alone:
//
//   - the failure detector (detector.go): membership, heartbeats, a
//     worker dead after Config.Miss silent beat intervals or at the tick
//     after its stream ended; a late tick (the planner itself stalled)
//     moves every last beat on instead of killing everyone;
//   - the scheduler (scheduler.go): placement by key groups (assign, by
//     largest remainder of the shares, keeping groups where they are),
//     scale requests and steps, migrations awaiting every member's
//     report, rejoins, the failover (replay without checkpoints, a
//     global rollback to the last checkpoint with them) and the job
//     restart when every worker died;
//   - the checkpoint coordinator (coordinator.go): when checkpoints fall
//     due, barrier and pause checkpoints, their snapshot frames, the last
//     complete checkpoint.
//
// One reconfiguration (the initial placement, a scale, a failover, a
// checkpoint) runs at a time; the rest wait in a queue (core.go). A
// pending failover goes first, discards a checkpoint in progress at once
// and preempts a scale still waiting for its workers to join; a migration
// or a checkpoint in progress is waited for (bounded by
// Config.MigrationTimeout and Config.CheckpointTimeout).
//
// # Events and actions
//
// Events: Begin, Tick, Hello, Beat, StreamEnded, Scaled (the provider's
// answer), ScaleRequest, Migrated, Snapshot, SnapshotDone, Completed,
// EndLoad, FinalCheckpoint; every Step also carries the shell's input log
// state (Log: inputs generated, leading inputs complete). Actions: Bind
// (accept a stream as member ID), Send (a frame to a member), Close,
// Refuse, ScaleWorkers (call the provider), Routes (the ingress's owner
// table), Flush, PauseIngress, ResumeIngress, Replay, CheckpointCompleted
// (record it; drop the payloads it covers), StartLoad, Fail, ScaleDone
// (answer a ScaleRequest), Note (a log line). Format renders an action on
// one line.
//
// When every worker is dead the restart strategy (Config.Restart, after
// Flink's: none, fixed-delay, failure-rate) decides: a job restart
// (jobRestart) waits the delay, asks the provider for the target count
// and restores the last complete checkpoint on the workers that joined
// (without checkpoints: empty state, the loss counted by LostGroups), or
// the job fails (Fail; the core takes no event after it). A scale-in
// names the members it drained (ScaleWorkers.Stop), so that a provider
// stops exactly those. Persisting checkpoints for a restore is a shell
// action on CheckpointCompleted (Core.Checkpoint holds the state and the
// cut, the source offset), and a restore is Config.Restore (resume.go).
//
// # Tests
//
// The scripts under testdata/ drive the core in virtual time (a small
// datadriven driver in script_test.go plays the shell and the workers:
// hello w1, tick 200ms, advance 1s, kill w1, ack w1, migrated w0 w1, …)
// and hold its actions against the expected output; go test -rewrite
// regenerates it. FuzzStep feeds arbitrary event sequences.
//
// Determinism: the actions are a function of the events, their times and
// the log states (member IDs, key groups and snapshot keys are iterated in
// ascending order); times are durations of the shell's clock.
package core
