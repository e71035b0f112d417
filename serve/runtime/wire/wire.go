package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Limits.
const (
	// MaxFrame is the largest frame body accepted, bytes.
	MaxFrame = 16 << 20
	// MaxPayload is the largest record payload or state value, bytes.
	MaxPayload = 1 << 20
	// MaxAddr is the longest address or token string, bytes.
	MaxAddr = 256
	// KeyGroups bounds key group indices (ops.KeyGroups; checked by a test).
	KeyGroups = 128
	// MaxOps bounds the operators of an application.
	MaxOps = 256
	// MaxMembers bounds the workers of a placement.
	MaxMembers = 4096
)

// Kind is a frame's message kind.
type Kind uint8

// Message kinds.
const (
	KindHello        Kind = iota + 1 // Hello: a worker joins the planner or a peer; the planner's welcome
	KindHeartbeat                    // Heartbeat: worker → planner, liveness
	KindBatch                        // Batch: records for operator instances
	KindMetrics                      // Metrics: worker → planner, once a second
	KindAlloc                        // Alloc: planner → worker, millicores per task
	KindPlacement                    // Placement: planner → worker, owners and moves for an epoch
	KindState                        // State: worker → worker, one moving key group
	KindMark                         // Mark: worker → every peer, "I switched to this epoch"
	KindEnd                          // End: worker → worker, end of this epoch's handover to you
	KindDone                         // Done: worker → planner, completion weight per input
	KindMigrated                     // Migrated: worker → planner, handover finished, with the pause
	KindCheckpoint                   // Checkpoint: planner → worker, snapshot your key groups now
	KindSnapshot                     // Snapshot: one key group's state in a checkpoint (worker → planner, planner → worker on a restore)
	KindSnapshotDone                 // SnapshotDone: worker → planner, this worker's part of a checkpoint is complete
	KindRestore                      // Restore: planner → worker, the next placement restores a checkpoint
	KindBarrier                      // Barrier: a checkpoint's barrier, in-band (planner → worker in the ingress, worker → worker after a snapshot)
	KindAbort                        // Abort: planner → worker, a checkpoint in progress is discarded
	KindBye                          // Bye: planner → worker, the last frame of its stream, saying why it ends
	kindMax
)

var kindNames = [...]string{"", "hello", "heartbeat", "batch", "metrics", "alloc", "placement", "state", "mark", "end", "done", "migrated", "checkpoint", "snapshot", "snapshot-done", "restore", "barrier", "abort", "bye"}

func (k Kind) String() string {
	if k > 0 && k < kindMax {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("wire: malformed message")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// ReadFrame reads one frame from r into buf (grown as needed) and returns
// its kind and payload (aliasing the returned buffer). A body longer than
// MaxFrame, an empty body or an unknown kind is an error; io.EOF is
// returned only at a clean frame boundary.
func ReadFrame(r *bufio.Reader, buf []byte) (Kind, []byte, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return 0, nil, buf, malformed("truncated frame header")
		}
		return 0, nil, buf, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrame {
		return 0, nil, buf, malformed("frame length %d, want 1..%d", n, MaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, nil, buf, malformed("truncated frame: %d-byte body cut short", n)
		}
		return 0, nil, buf, err
	}
	k := Kind(buf[0])
	if k == 0 || k >= kindMax {
		return 0, nil, buf, malformed("unknown kind %d", buf[0])
	}
	return k, buf[1:], buf, nil
}

// SplitFrame parses one frame from the front of b, for callers that hold a
// whole buffer; it returns the rest.
func SplitFrame(b []byte) (Kind, []byte, []byte, error) {
	if len(b) < 4 {
		return 0, nil, b, malformed("truncated frame header")
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || n > MaxFrame {
		return 0, nil, b, malformed("frame length %d, want 1..%d", n, MaxFrame)
	}
	if uint64(len(b)-4) < uint64(n) {
		return 0, nil, b, malformed("truncated frame: %d-byte body, %d bytes left", n, len(b)-4)
	}
	body := b[4 : 4+n]
	k := Kind(body[0])
	if k == 0 || k >= kindMax {
		return 0, nil, b, malformed("unknown kind %d", body[0])
	}
	return k, body[1:], b[4+n:], nil
}

// begin appends a frame header with a length placeholder and the kind; end
// patches the length.
func begin(b []byte, k Kind) ([]byte, int) {
	at := len(b)
	b = append(b, 0, 0, 0, 0, byte(k))
	return b, at
}

func end(b []byte, at int) []byte {
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func u16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func u32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func u64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func f64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}
func str(b []byte, s string) []byte { b = u16(b, uint16(len(s))); return append(b, s...) }
func bytesField(b []byte, p []byte) []byte {
	b = u32(b, uint32(len(p)))
	return append(b, p...)
}

// dec reads fields from a payload; the first error sticks.
type dec struct {
	b    []byte
	err  error
	what string
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = malformed(d.what+": "+format, args...)
	}
	d.b = nil
}

func (d *dec) need(n int, field string) bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < n {
		d.fail("truncated at %s", field)
		return false
	}
	return true
}

func (d *dec) u8(field string) uint8 {
	if !d.need(1, field) {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u16(field string) uint16 {
	if !d.need(2, field) {
		return 0
	}
	v := binary.LittleEndian.Uint16(d.b)
	d.b = d.b[2:]
	return v
}

func (d *dec) u32(field string) uint32 {
	if !d.need(4, field) {
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *dec) u64(field string) uint64 {
	if !d.need(8, field) {
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *dec) f64(field string) float64 {
	v := math.Float64frombits(d.u64(field))
	if d.err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		d.fail("%s is not finite", field)
	}
	return v
}

func (d *dec) str(field string) string {
	n := int(d.u16(field))
	if d.err != nil {
		return ""
	}
	if n > MaxAddr {
		d.fail("%s has %d bytes, want ≤ %d", field, n, MaxAddr)
		return ""
	}
	if !d.need(n, field) {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *dec) bytes(field string) []byte {
	n := d.u32(field)
	if d.err != nil {
		return nil
	}
	if n > MaxPayload {
		d.fail("%s has %d bytes, want ≤ %d", field, n, MaxPayload)
		return nil
	}
	if !d.need(int(n), field) {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

// count reads an element count and checks that the remaining payload can
// hold that many elements of at least minSize bytes each, so a forged count
// cannot make the decoder allocate more than the payload's size.
func (d *dec) count(field string, minSize, limit int) int {
	n := int(d.u32(field))
	if d.err != nil {
		return 0
	}
	if n > limit {
		d.fail("%s count %d, want ≤ %d", field, n, limit)
		return 0
	}
	if n*minSize > len(d.b) {
		d.fail("%s count %d does not fit the %d bytes left", field, n, len(d.b))
		return 0
	}
	return n
}

func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}
