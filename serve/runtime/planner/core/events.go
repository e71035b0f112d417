package core

import "streamscale/serve/runtime/wire"

// An Event is one input of the core (Core.Step). Events that come from a
// worker's stream name the stream by Conn, a number the shell gives each
// accepted connection (never reused): an event of a stream that is no
// longer its member's (a dead worker's, a replaced one's) is ignored.
type Event interface{ event() }

// Begin starts the run: the core asks for Config.Workers workers and
// places the application on them once they joined (then StartLoad).
type Begin struct{}

// Tick is the passage of time (the time is Step's now): failure
// detection, the scale steps and periodic checkpoints that fall due,
// rejoins and timeouts run on ticks. The shell ticks every Config.Tick.
type Tick struct{}

// Hello is a worker's stream opening (its token already checked): ID is
// the ID it asks for (wire.NoID: any) and Addr its peer address.
type Hello struct {
	Conn uint64
	ID   uint32
	Addr string
}

// Beat is a heartbeat read from a stream.
type Beat struct {
	Conn uint64
	From uint32
}

// StreamEnded is a worker's stream ending (read error or EOF): the worker
// is declared dead at the next tick.
type StreamEnded struct{ Conn uint64 }

// Scaled is the provider's answer to ScaleWorkers.
type Scaled struct {
	N   int
	Err error
}

// ScaleRequest asks for N workers owning the key groups by Shares (nil:
// even): a placement controller's decision. The core answers ScaleDone
// with the same ID (0: no answer wanted) when it has carried it out.
type ScaleRequest struct {
	ID     uint64
	N      int
	Shares [][]float64
	Reason string
}

// Migrated is a worker's report that it installed an epoch.
type Migrated struct {
	Conn   uint64
	Report wire.Migrated
}

// Snapshot is one snapshot frame of a checkpoint.
type Snapshot struct {
	Conn uint64
	S    wire.Snapshot
}

// SnapshotDone is a worker's end of its part of a checkpoint.
type SnapshotDone struct {
	Conn uint64
	D    wire.SnapshotDone
}

// Completed says that inputs completed (the Log passed with it shows how
// far): a pause checkpoint waits for it.
type Completed struct{}

// EndLoad says the load and its drain are over: scale steps not yet due
// are dropped and no periodic checkpoint starts any more (what is queued
// or running finishes).
type EndLoad struct{}

// FinalCheckpoint asks for one more checkpoint (with checkpoints on): the
// shell sends it once every input completed, so that it holds the run's
// final state.
type FinalCheckpoint struct{}

func (Begin) event()           {}
func (Tick) event()            {}
func (Hello) event()           {}
func (Beat) event()            {}
func (StreamEnded) event()     {}
func (Scaled) event()          {}
func (ScaleRequest) event()    {}
func (Migrated) event()        {}
func (Snapshot) event()        {}
func (SnapshotDone) event()    {}
func (Completed) event()       {}
func (EndLoad) event()         {}
func (FinalCheckpoint) event() {}

// Log is the state of the shell's input log that the core reads with
// every event: Inputs generated so far, and Done, the number of leading
// inputs complete (inputs 0..Done−1 are complete and none of them is a
// replay still open).
type Log struct {
	Inputs, Done int
}
