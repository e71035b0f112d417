package kcfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"streamscale/serve/runtime/ops"
)

// The task-host protocol: frames of a 4-byte little-endian length n, then
// n bytes: a type byte and its body. Integers in bodies are little-endian
// u32/u64 or uvarints; byte strings are a uvarint length and the bytes.
const (
	// MaxFrame bounds a frame's length (type + body).
	MaxFrame = 16 << 20
	// MaxRecords bounds the records of a batch and the emits of a result.
	MaxRecords = 1 << 16
	// protoVersion is the hello's version.
	protoVersion = 1
)

// Frame types.
const (
	tHello  byte = 1 // parent → host: what to run
	tReady  byte = 2 // host → parent: hello accepted
	tSet    byte = 3 // parent → host: new allocation (in-process mode)
	tBatch  byte = 4 // parent → host: records to process
	tResult byte = 5 // host → parent: a batch's outcome
	tError  byte = 6 // host → parent: fatal error, then the host exits
)

// Mode is how a task host's CPU is limited.
type Mode byte

const (
	// InProcess: the host wraps each batch in a cfs.Quota (the worker's
	// own enforcement), with no cgroup.
	InProcess Mode = 1
	// Kernel: the host runs unthrottled inside a cgroup whose CFS quota
	// is the allocation.
	Kernel Mode = 2
)

func (m Mode) String() string {
	switch m {
	case InProcess:
		return "inprocess"
	case Kernel:
		return "kernel"
	}
	return fmt.Sprintf("mode(%d)", byte(m))
}

// ParseMode parses "inprocess" or "kernel".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "inprocess":
		return InProcess, nil
	case "kernel":
		return Kernel, nil
	}
	return 0, fmt.Errorf("kcfs: CPU enforcement %q, want inprocess or kernel", s)
}

// hello tells a host what to run.
type hello struct {
	mode       Mode
	millicores uint32
	period     time.Duration
	app        string
	op         uint32
}

// Emit is one record a batch's execution emitted.
type Emit struct {
	Parent  int // index of the batch record that emitted it
	To      int
	Key     uint64
	Payload []byte // valid until the next Recv
}

// Result is a batch's outcome.
type Result struct {
	ID     uint64
	Failed []bool // per record: the operator returned an error
	Emits  []Emit // in emission order
	// The host's counters after the batch: process CPU (every thread:
	// the operator, I/O, GC), the CPU charged to the in-process quota and
	// its period counts (0 in kernel mode), and the batch's wall time.
	ProcCPU, Charged   time.Duration
	Periods, Throttled int64
	Exec               time.Duration
}

// writeFrame writes one frame.
func writeFrame(w io.Writer, typ byte, body []byte) error {
	if len(body)+1 > MaxFrame {
		return fmt.Errorf("kcfs: frame of %d bytes exceeds %d", len(body)+1, MaxFrame)
	}
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(body)+1))
	hdr[4] = typ
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// readFrame reads one frame into buf (grown as needed) and returns its
// type and body (aliasing buf).
func readFrame(r io.Reader, buf []byte) (typ byte, body, nbuf []byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, buf, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrame {
		return 0, nil, buf, fmt.Errorf("kcfs: frame length %d, want 1..%d", n, MaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, buf, fmt.Errorf("kcfs: frame of %d bytes: %w", n, err)
	}
	return buf[0], buf[1:], buf, nil
}

// dec reads a body; the first failure sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("kcfs: truncated or malformed %s", what)
	}
	d.b = nil
}

// take consumes the next n bytes, or fails (nil) if fewer are left.
func (d *dec) take(n uint64, what string) []byte {
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u64(what string) uint64 {
	if v := d.take(8, what); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (d *dec) u32(what string) uint32 {
	if v := d.take(4, what); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (d *dec) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) bytes(what string) []byte {
	n := d.uvarint(what)
	return d.take(n, what)
}

func (d *dec) count(what string) int {
	n := d.uvarint(what)
	if d.err == nil && n > MaxRecords {
		d.err = fmt.Errorf("kcfs: %s count %d exceeds %d", what, n, MaxRecords)
	}
	return int(n)
}

func (d *dec) done(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("kcfs: %s has %d trailing bytes", what, len(d.b))
	}
	return d.err
}

func putBytes(b, v []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(v))), v...) }

func appendHello(b []byte, h hello) []byte {
	b = append(b, protoVersion, byte(h.mode))
	b = binary.LittleEndian.AppendUint32(b, h.millicores)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.period))
	b = putBytes(b, []byte(h.app))
	return binary.LittleEndian.AppendUint32(b, h.op)
}

func decodeHello(body []byte) (hello, error) {
	if len(body) < 2 {
		return hello{}, errors.New("kcfs: truncated hello")
	}
	if body[0] != protoVersion {
		return hello{}, fmt.Errorf("kcfs: hello version %d, want %d", body[0], protoVersion)
	}
	h := hello{mode: Mode(body[1])}
	if h.mode != InProcess && h.mode != Kernel {
		return hello{}, fmt.Errorf("kcfs: hello mode %d, want %d or %d", body[1], InProcess, Kernel)
	}
	d := dec{b: body[2:]}
	h.millicores = d.u32("hello millicores")
	p := d.u64("hello period")
	app := d.bytes("hello app")
	h.op = d.u32("hello operator")
	if err := d.done("hello"); err != nil {
		return hello{}, err
	}
	if p == 0 || p > uint64(time.Second) {
		return hello{}, fmt.Errorf("kcfs: hello period %d ns, want 1..%d", p, time.Second)
	}
	if h.millicores == 0 {
		return hello{}, errors.New("kcfs: hello with 0 millicores")
	}
	h.period, h.app = time.Duration(p), string(app)
	return h, nil
}

// AppendBatch appends a batch body: id, record count, then per record key,
// input, seq (u64 each) and the payload.
func AppendBatch(b []byte, id uint64, recs []ops.Record) []byte {
	b = binary.LittleEndian.AppendUint64(b, id)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = binary.LittleEndian.AppendUint64(b, r.Key)
		b = binary.LittleEndian.AppendUint64(b, r.Input)
		b = binary.LittleEndian.AppendUint64(b, r.Seq)
		b = putBytes(b, r.Payload)
	}
	return b
}

// DecodeBatch decodes a batch body into recs[:0]; payloads alias body.
func DecodeBatch(body []byte, recs []ops.Record) (uint64, []ops.Record, error) {
	d := dec{b: body}
	id := d.u64("batch id")
	n := d.count("batch record")
	recs = recs[:0]
	for i := 0; i < n && d.err == nil; i++ {
		var r ops.Record
		r.Key = d.u64("batch record key")
		r.Input = d.u64("batch record input")
		r.Seq = d.u64("batch record seq")
		r.Payload = d.bytes("batch record payload")
		recs = append(recs, r)
	}
	if err := d.done("batch"); err != nil {
		return 0, recs[:0], err
	}
	return id, recs, nil
}

// AppendResult appends a result body.
func AppendResult(b []byte, r *Result) []byte {
	b = binary.LittleEndian.AppendUint64(b, r.ID)
	for _, v := range []int64{int64(r.ProcCPU), int64(r.Charged), r.Periods, r.Throttled, int64(r.Exec)} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	b = binary.AppendUvarint(b, uint64(len(r.Failed)))
	for _, f := range r.Failed {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r.Emits)))
	for _, e := range r.Emits {
		b = binary.AppendUvarint(b, uint64(e.Parent))
		b = binary.AppendUvarint(b, uint64(e.To))
		b = binary.LittleEndian.AppendUint64(b, e.Key)
		b = putBytes(b, e.Payload)
	}
	return b
}

// DecodeResult decodes a result body into r, reusing its slices; payloads
// alias body. Every emit's parent indexes a record of the batch that did
// not fail, and parents never decrease (emission order), as the worker
// routes them.
func DecodeResult(body []byte, r *Result) error {
	d := dec{b: body}
	r.ID = d.u64("result id")
	var v [5]int64
	for i := range v {
		v[i] = int64(d.u64("result counters"))
		if v[i] < 0 {
			d.fail("result counters")
		}
	}
	r.ProcCPU, r.Charged, r.Periods, r.Throttled, r.Exec = time.Duration(v[0]), time.Duration(v[1]), v[2], v[3], time.Duration(v[4])
	n := d.count("result record")
	r.Failed = r.Failed[:0]
	for i := 0; i < n && d.err == nil; i++ {
		if len(d.b) < 1 || d.b[0] > 1 {
			d.fail("result failed flag")
			break
		}
		r.Failed = append(r.Failed, d.b[0] == 1)
		d.b = d.b[1:]
	}
	m := d.count("result emit")
	r.Emits = r.Emits[:0]
	for i := 0; i < m && d.err == nil; i++ {
		var e Emit
		p, to := d.uvarint("result emit parent"), d.uvarint("result emit operator")
		switch {
		case d.err != nil:
		case p >= uint64(n) || to >= 1<<16:
			d.err = fmt.Errorf("kcfs: result emit %d: parent %d of %d records, operator %d", i, p, n, to)
		case i > 0 && int(p) < r.Emits[i-1].Parent:
			d.err = fmt.Errorf("kcfs: result emit %d: parent %d after parent %d, want emission order", i, p, r.Emits[i-1].Parent)
		case r.Failed[p]:
			d.err = fmt.Errorf("kcfs: result emit %d: its record %d failed", i, p)
		}
		e.Parent, e.To = int(p), int(to)
		e.Key = d.u64("result emit key")
		e.Payload = d.bytes("result emit payload")
		r.Emits = append(r.Emits, e)
	}
	if err := d.done("result"); err != nil {
		r.Failed, r.Emits = r.Failed[:0], r.Emits[:0]
		return err
	}
	return nil
}
