package ckptstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"unicode/utf8"

	"streamscale/serve/runtime/wire"
)

// Limits.
const (
	// MaxFile is the largest checkpoint file read, bytes (1 GiB): the
	// size bound of Load and Latest.
	MaxFile = 1 << 30
	// MaxJob is the longest job description, bytes.
	MaxJob = 4096
)

// magic opens every checkpoint file; its last byte is the format version.
var magic = [8]byte{'S', 'S', 'C', 'K', 'P', 'T', 0, version}

const (
	version = 1
	header  = 16 // magic, body length
	trailer = 4  // CRC-32C
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error for a file that is not a complete,
// intact checkpoint of this format (truncated, corrupt, foreign or of
// another version).
var ErrCorrupt = errors.New("not a valid checkpoint")

// Checkpoint is one complete checkpoint of a job.
type Checkpoint struct {
	// Job identifies the job (application, seed, load): a restore
	// refuses a checkpoint of another job. At most MaxJob bytes of UTF-8.
	Job string
	// ID is the checkpoint's ID (≥ 1), Cut its source offset: the state
	// is the effect of inputs 0..Cut−1, each once, and of no later input.
	ID, Cut uint64
	// Ops is the application's operator count (1..wire.MaxOps).
	Ops int
	// State is the keyed state by op<<8 | key group → key → value; a key
	// group absent or empty has no state. Every key is in its group (key
	// mod wire.KeyGroups).
	State map[uint32]map[uint64][]byte
}

// check reports whether c can be encoded.
func (c *Checkpoint) check() error {
	switch {
	case c.ID == 0:
		return errors.New("checkpoint id 0")
	case c.Ops < 1 || c.Ops > wire.MaxOps:
		return fmt.Errorf("%d operators, want 1..%d", c.Ops, wire.MaxOps)
	case len(c.Job) > MaxJob || !utf8.ValidString(c.Job):
		return fmt.Errorf("job description of %d bytes, want ≤ %d of UTF-8", len(c.Job), MaxJob)
	}
	for g, m := range c.State {
		op, kg := g>>8, g&0xff
		if int(op) >= c.Ops || kg >= wire.KeyGroups {
			return fmt.Errorf("state of operator %d key group %d out of range", op, kg)
		}
		for k, v := range m {
			if uint32(k%wire.KeyGroups) != kg {
				return fmt.Errorf("key %d is not in key group %d", k, kg)
			}
			if len(v) > wire.MaxPayload {
				return fmt.Errorf("value of %d bytes for key %d, want ≤ %d", len(v), k, wire.MaxPayload)
			}
		}
	}
	return nil
}

// Encode returns the file's bytes for c: canonical (key groups, then keys
// ascending; empty key groups left out), so a function of c alone.
func Encode(c *Checkpoint) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("ckptstore: %w", err)
	}
	groups := make([]uint32, 0, len(c.State))
	for g, m := range c.State {
		if len(m) > 0 {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	b := make([]byte, 0, 1024)
	b = append(b, magic[:]...)
	b = append(b, make([]byte, 8)...) // the body length, patched below
	b = binary.LittleEndian.AppendUint64(b, c.ID)
	b = binary.LittleEndian.AppendUint64(b, c.Cut)
	b = binary.LittleEndian.AppendUint16(b, uint16(c.Ops))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.Job)))
	b = append(b, c.Job...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(groups)))
	var keys []uint64
	for _, g := range groups {
		m := c.State[g]
		keys = keys[:0]
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = binary.LittleEndian.AppendUint16(b, uint16(g>>8))
		b = binary.LittleEndian.AppendUint16(b, uint16(g&0xff))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
		for _, k := range keys {
			b = binary.LittleEndian.AppendUint64(b, k)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(m[k])))
			b = append(b, m[k]...)
		}
	}
	binary.LittleEndian.PutUint64(b[8:], uint64(len(b)-header))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// Decode parses a checkpoint file's bytes. It checks, in order, the magic
// and version, the length (truncated or trailing bytes), the checksum and
// then the structure: every error wraps ErrCorrupt and says what is
// wrong. It never panics, and allocates at most in proportion to len(b).
func Decode(b []byte) (Checkpoint, error) {
	switch n := min(len(b), 6); {
	case !bytes.Equal(b[:n], magic[:n]) || len(b) == 0:
		return Checkpoint{}, corrupt("not a streamscale checkpoint (it starts %q, want %q)", b[:min(len(b), len(magic))], magic[:6])
	case len(b) < header+trailer:
		return Checkpoint{}, corrupt("truncated: %d bytes, a checkpoint has at least %d", len(b), header+trailer)
	case b[6] != 0 || b[7] != version:
		return Checkpoint{}, corrupt("format version %d, want %d", binary.BigEndian.Uint16(b[6:8]), version)
	}
	body, size := binary.LittleEndian.Uint64(b[8:]), uint64(len(b)-header-trailer)
	switch {
	case body > size:
		return Checkpoint{}, corrupt("truncated: %d bytes, the header says %d", len(b), body+header+trailer)
	case body < size:
		return Checkpoint{}, corrupt("%d bytes after the end of the checkpoint", size-body)
	}
	end := header + int(body)
	if sum, got := binary.LittleEndian.Uint32(b[end:]), crc32.Checksum(b[:end], castagnoli); sum != got {
		return Checkpoint{}, corrupt("checksum mismatch (stored %08x, computed %08x): the file is corrupt", sum, got)
	}
	d := dec{b: b[header:end]}
	c := Checkpoint{ID: d.u64("id"), Cut: d.u64("cut"), Ops: int(d.u16("operators"))}
	n := int(d.u32("job length"))
	if d.err == nil && (n > MaxJob || n > len(d.b)) {
		d.fail("job description of %d bytes", n)
	}
	if d.err == nil {
		c.Job, d.b = string(d.b[:n]), d.b[n:]
	}
	switch {
	case d.err != nil:
	case c.ID == 0:
		d.fail("checkpoint id 0")
	case c.Ops < 1 || c.Ops > wire.MaxOps:
		d.fail("%d operators, want 1..%d", c.Ops, wire.MaxOps)
	case !utf8.ValidString(c.Job):
		d.fail("job description is not UTF-8")
	}
	groups := d.count("key groups", 8)
	c.State = make(map[uint32]map[uint64][]byte, groups)
	prev := int64(-1)
	for range groups {
		op, kg := d.u16("operator"), d.u16("key group")
		g := uint32(op)<<8 | uint32(kg)
		keys := d.count("keys", 12)
		switch {
		case d.err != nil:
		case int(op) >= c.Ops || kg >= wire.KeyGroups:
			d.fail("operator %d key group %d out of range (%d operators, %d key groups)", op, kg, c.Ops, wire.KeyGroups)
		case int64(g) <= prev:
			d.fail("operator %d key group %d out of order", op, kg)
		case keys == 0:
			d.fail("operator %d key group %d has no keys", op, kg)
		}
		if d.err != nil {
			break
		}
		prev = int64(g)
		m := make(map[uint64][]byte, keys)
		var last uint64
		for i := range keys {
			k := d.u64("key")
			vn := int(d.u32("value length"))
			switch {
			case d.err != nil:
			case uint32(k%wire.KeyGroups) != uint32(kg):
				d.fail("key %d is not in key group %d", k, kg)
			case i > 0 && k <= last:
				d.fail("key %d of operator %d key group %d out of order", k, op, kg)
			case vn > wire.MaxPayload || vn > len(d.b):
				d.fail("value of %d bytes for key %d, %d left", vn, k, len(d.b))
			}
			if d.err != nil {
				break
			}
			m[k], d.b, last = slices.Clone(d.b[:vn:vn]), d.b[vn:], k
		}
		c.State[g] = m
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the last key group", len(d.b))
	}
	if d.err != nil {
		return Checkpoint{}, d.err
	}
	return c, nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// dec reads little-endian fields, keeping the first error.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = corrupt("malformed: "+format, args...)
	}
}

func (d *dec) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("%s: %d bytes left, want %d", what, len(d.b), n)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) u16(what string) uint16 {
	if p := d.take(2, what); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (d *dec) u32(what string) uint32 {
	if p := d.take(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *dec) u64(what string) uint64 {
	if p := d.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// count reads a count of items of at least size bytes each: one the bytes
// left cannot hold is malformed (so no allocation exceeds the input).
func (d *dec) count(what string, size int) int {
	n := d.u32(what)
	if d.err == nil && uint64(n)*uint64(size) > uint64(len(d.b)) {
		d.fail("%d %s in %d bytes", n, what, len(d.b))
		return 0
	}
	return int(n)
}
