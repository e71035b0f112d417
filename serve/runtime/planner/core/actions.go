package core

import (
	"fmt"
	"slices"
	"strings"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// An Action is one output of the core for the shell to perform, in order.
type Action interface{ action() }

// Msg is a frame the core sends: a wire message (or RestoreMsg).
type Msg interface{ Append([]byte) []byte }

// Bind accepts stream Conn as member ID: the shell sends it the welcome
// Hello (with ID, Epoch and the shared token) and routes Send{To: ID} to
// it from now on.
type Bind struct {
	Conn  uint64
	ID    uint32
	Epoch uint64
}

// Send queues Msg on member To's stream.
type Send struct {
	To  uint32
	Msg Msg
}

// Close ends member ID's stream (Dead: found dead; else stopped after a
// scale-in) and unbinds it.
type Close struct {
	ID   uint32
	Conn uint64
	Dead bool
}

// Refuse counts a refused frame or stream and logs Err; a stream (Conn ≠
// 0) that was never bound is closed.
type Refuse struct {
	Conn uint64
	Err  error
}

// ScaleWorkers asks the provider for N workers; the shell answers Scaled.
// Provider calls are made one at a time, in order. Stop, if set, names
// the members a scale-in drained: the provider stops exactly those (and
// no other, live or dead), leaving N. StopAddrs are their addresses (their
// hellos' Addr), in the same order: what a provider knows its workers by,
// since a worker that rejoined is another member under a fresh ID.
type ScaleWorkers struct {
	N         int
	Stop      []uint32
	StopAddrs []string
}

// Routes is the ingress's routing table: the owner of every key group of
// every operator at Epoch, and the members that may be fed (live and
// placed); a key group whose owner is not among them gets nothing.
type Routes struct {
	Epoch  uint64
	Owners [][ops.KeyGroups]uint32
	Live   []uint32
}

// Flush sends every input generated so far (before a barrier).
type Flush struct{}

// PauseIngress holds the inputs generated from now on; ResumeIngress
// sends them and resumes.
type PauseIngress struct{}

// ResumeIngress: see PauseIngress.
type ResumeIngress struct{}

// Replay sends inputs again with a new attempt number: with OpenOnly
// every input not complete (a failover without checkpoints), else every
// input from From on (a restore: those that completed after the
// checkpoint are awaited again, not counted twice), and Done drops to
// From.
type Replay struct {
	From     int
	OpenOnly bool
}

// CheckpointCompleted records checkpoint ID, covering inputs 0..Cut−1, as
// the one a failover restores (Core.Checkpoint holds its state); the
// payloads of inputs Prev..Cut−1 are no longer needed for replay.
type CheckpointCompleted struct {
	ID        uint64
	Cut, Prev int
}

// StartLoad starts the load: the application is placed.
type StartLoad struct{}

// Fail ends the run with Err: the initial workers did not join, or every
// worker died and the restart strategy allows no restart. The core takes
// no event after it.
type Fail struct{ Err error }

// ScaleDone answers ScaleRequest ID (Err: it could not be carried out).
type ScaleDone struct {
	ID  uint64
	Err error
}

// Note is a line for the log.
type Note struct{ Text string }

func (Bind) action()                {}
func (Send) action()                {}
func (Close) action()               {}
func (Refuse) action()              {}
func (ScaleWorkers) action()        {}
func (Routes) action()              {}
func (Flush) action()               {}
func (PauseIngress) action()        {}
func (ResumeIngress) action()       {}
func (Replay) action()              {}
func (CheckpointCompleted) action() {}
func (StartLoad) action()           {}
func (Fail) action()                {}
func (ScaleDone) action()           {}
func (Note) action()                {}

// RestoreMsg is a Restore frame followed by its Snapshot frames.
type RestoreMsg struct {
	Restore wire.Restore
	Frames  []byte
}

// Append appends the frames.
func (m *RestoreMsg) Append(b []byte) []byte {
	return append(m.Restore.Append(b), m.Frames...)
}

// Format renders an action on one line, deterministically (the scripted
// tests print it).
func Format(a Action) string {
	switch a := a.(type) {
	case Bind:
		return fmt.Sprintf("bind conn%d as w%d (epoch %d)", a.Conn, a.ID, a.Epoch)
	case Send:
		return fmt.Sprintf("send w%d %s", a.To, formatMsg(a.Msg))
	case Close:
		return fmt.Sprintf("close w%d", a.ID)
	case Refuse:
		return fmt.Sprintf("refuse conn%d: %v", a.Conn, a.Err)
	case ScaleWorkers:
		if a.Stop != nil {
			return fmt.Sprintf("scale-workers %d stop %v at %v", a.N, a.Stop, a.StopAddrs)
		}
		return fmt.Sprintf("scale-workers %d", a.N)
	case Routes:
		return fmt.Sprintf("routes epoch %d live %v owners %s", a.Epoch, a.Live, formatOwners(a.Owners))
	case Flush:
		return "flush"
	case PauseIngress:
		return "pause-ingress"
	case ResumeIngress:
		return "resume-ingress"
	case Replay:
		if a.OpenOnly {
			return "replay open inputs"
		}
		return fmt.Sprintf("replay from %d", a.From)
	case CheckpointCompleted:
		return fmt.Sprintf("checkpoint-completed %d cut %d (was %d)", a.ID, a.Cut, a.Prev)
	case StartLoad:
		return "start-load"
	case Fail:
		return fmt.Sprintf("fail: %v", a.Err)
	case ScaleDone:
		if a.Err != nil {
			return fmt.Sprintf("scale-done %d: %v", a.ID, a.Err)
		}
		return fmt.Sprintf("scale-done %d", a.ID)
	case Note:
		return "note: " + a.Text
	}
	return fmt.Sprintf("%T", a)
}

func formatMsg(m Msg) string {
	switch m := m.(type) {
	case *wire.Placement:
		var ids []uint32
		for _, w := range m.Members {
			ids = append(ids, w.ID)
		}
		return fmt.Sprintf("placement epoch %d members %v moves %d owners %s", m.Epoch, ids, len(m.Moves), formatOwners(m.Owners))
	case *wire.Barrier:
		return fmt.Sprintf("barrier %d cut %d epoch %d members %v", m.ID, m.Cut, m.Epoch, m.Members)
	case *wire.Checkpoint:
		return fmt.Sprintf("checkpoint %d epoch %d", m.ID, m.Epoch)
	case *wire.Abort:
		return fmt.Sprintf("abort %d", m.ID)
	case *RestoreMsg:
		return fmt.Sprintf("restore epoch %d checkpoint %d frames %d (%d bytes)", m.Restore.Epoch, m.Restore.ID, m.Restore.Frames, len(m.Frames))
	}
	return fmt.Sprintf("%T", m)
}

// formatOwners counts each operator's key groups by owner: "[0:64 1:64]
// [0:64 1:64]".
func formatOwners(owners [][ops.KeyGroups]uint32) string {
	var b strings.Builder
	for o := range owners {
		n := map[uint32]int{}
		for _, id := range owners[o] {
			n[id]++
		}
		ids := make([]uint32, 0, len(n))
		for id := range n {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if o > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('[')
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d:%d", id, n[id])
		}
		b.WriteByte(']')
	}
	return b.String()
}
