package ops

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
)

// The operators' intermediate records are compact binary tuples: fixed
// little-endian 8-byte numbers, single bytes and length-prefixed (uvarint)
// byte strings, in an order each operator documents. Readers check every
// bound and report a truncated or malformed tuple as an error.

// errKey is the error of a record whose key is not its partition key (the
// key its payload names): the state it would touch is not the record's.
var errKey = errors.New("record key is not the key of its payload")

// errShort is the error of a tuple that ends early.
var errShort = errors.New("truncated tuple")

type reader struct {
	b   []byte
	err error
}

func (r *reader) u64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = errShort
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) f64() float64 { return math.Float64frombits(r.u64()) }

func (r *reader) byte1() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.err = errShort
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// done reports the first error, or an error if bytes remain.
func (r *reader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("ops: %s: %w", what, r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("ops: %s: %d trailing bytes", what, len(r.b))
	}
	return nil
}

func putU64(b []byte, v uint64) []byte  { return binary.LittleEndian.AppendUint64(b, v) }
func putF64(b []byte, v float64) []byte { return putU64(b, math.Float64bits(v)) }
func putBytes(b, v []byte) []byte       { return append(binary.AppendUvarint(b, uint64(len(v))), v...) }

// scratch is a reusable output buffer. Operators take one from a pool per
// Process call, so an instance needs no lock and does not allocate in the
// steady state.
type scratch struct{ b []byte }

var scratchPool = sync.Pool{New: func() any { return &scratch{b: make([]byte, 0, 1024)} }}

func getScratch() *scratch { s := scratchPool.Get().(*scratch); s.b = s.b[:0]; return s }
func putScratch(s *scratch) {
	if cap(s.b) <= 1<<16 {
		scratchPool.Put(s)
	}
}

// hashBytes is FNV-1a (64 bit), the key of a byte-string key (word, ad id).
func hashBytes(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// mix is SplitMix64's finaliser (Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014): a bijective scrambling
// of an integer key.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// stateBuf returns a buffer for the new state of a key: the slice State.Get
// returned when it is large enough (updated in place), else a new one. Its
// contents are not preserved. A buffer handed to Put is never reused by
// the operator, so a store may keep it.
func stateBuf(old []byte, n int) []byte {
	if cap(old) >= n {
		return old[:0]
	}
	return make([]byte, 0, n)
}
