package envserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"streamscale/env"
)

// Section kinds of the binary encoding. A body is a sequence of sections,
// each kind (1 byte) | n (uint32, little-endian) | payload, where the
// payload holds n elements of the kind, little-endian.
const (
	KindFloat32 byte = 'f' // n float32 (IEEE 754 binary32), 4n bytes
	KindFloat64 byte = 'd' // n float64 (IEEE 754 binary64), 8n bytes
	KindInt64   byte = 'i' // n int64 (two's complement), 8n bytes
	KindBool    byte = 'b' // n bytes, each 0 or 1
	KindJSON    byte = 'j' // n bytes of UTF-8 JSON (metadata only)
)

// headerLen is the length of a section header: kind and count.
const headerLen = 5

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("envserver: malformed body")

// Section is one decoded section; Data aliases the decoded buffer.
type Section struct {
	Kind byte
	N    int    // elements
	Data []byte // N × element size bytes
}

func elemSize(kind byte) int {
	switch kind {
	case KindFloat32:
		return 4
	case KindFloat64, KindInt64:
		return 8
	case KindBool, KindJSON:
		return 1
	}
	return 0
}

// Decode splits b into at most maxSections sections. It fails (wrapping
// ErrMalformed) on an unknown kind, a count that overruns b, a bool byte
// other than 0 or 1, or more sections than allowed; it never panics and
// never allocates more than the section list.
func Decode(b []byte, maxSections int) ([]Section, error) {
	var out []Section
	for off := 0; off < len(b); {
		if len(out) == maxSections {
			return nil, fmt.Errorf("%w: more than %d sections", ErrMalformed, maxSections)
		}
		if len(b)-off < headerLen {
			return nil, fmt.Errorf("%w: %d trailing bytes at offset %d, shorter than a section header", ErrMalformed, len(b)-off, off)
		}
		kind := b[off]
		size := elemSize(kind)
		if size == 0 {
			return nil, fmt.Errorf("%w: unknown section kind %#x at offset %d", ErrMalformed, kind, off)
		}
		n := uint64(binary.LittleEndian.Uint32(b[off+1:]))
		off += headerLen
		if n*uint64(size) > uint64(len(b)-off) {
			return nil, fmt.Errorf("%w: section %q of %d elements needs %d bytes, %d left", ErrMalformed, kind, n, n*uint64(size), len(b)-off)
		}
		data := b[off : off+int(n)*size]
		if kind == KindBool {
			for i, c := range data {
				if c > 1 {
					return nil, fmt.Errorf("%w: bool %d is %d, want 0 or 1", ErrMalformed, i, c)
				}
			}
		}
		out = append(out, Section{Kind: kind, N: int(n), Data: data})
		off += len(data)
	}
	return out, nil
}

// Int64s appends the values of an int64 section to dst.
func (s Section) Int64s(dst []int64) []int64 {
	for i := range s.N {
		dst = append(dst, int64(binary.LittleEndian.Uint64(s.Data[8*i:])))
	}
	return dst
}

// Float32s appends the values of a float32 section to dst.
func (s Section) Float32s(dst []float32) []float32 {
	for i := range s.N {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(s.Data[4*i:])))
	}
	return dst
}

// Float64s appends the values of a float64 section to dst.
func (s Section) Float64s(dst []float64) []float64 {
	for i := range s.N {
		dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(s.Data[8*i:])))
	}
	return dst
}

// Bools appends the values of a bool section to dst.
func (s Section) Bools(dst []bool) []bool {
	for _, c := range s.Data {
		dst = append(dst, c == 1)
	}
	return dst
}

// Encoding helpers: each appends one section to b.

func appendHeader(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// AppendInt64s appends an int64 section.
func AppendInt64s(b []byte, v []int64) []byte {
	b = appendHeader(b, KindInt64, len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

// AppendFloat64s appends a float64 section.
func AppendFloat64s(b []byte, v []float64) []byte {
	b = appendHeader(b, KindFloat64, len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// AppendFloat32s appends a float32 section.
func AppendFloat32s(b []byte, v []float32) []byte {
	b = appendHeader(b, KindFloat32, len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// AppendBools appends a bool section.
func AppendBools(b []byte, v []bool) []byte {
	b = appendHeader(b, KindBool, len(v))
	for _, x := range v {
		c := byte(0)
		if x {
			c = 1
		}
		b = append(b, c)
	}
	return b
}

// AppendJSON appends a JSON section holding js.
func AppendJSON(b []byte, js []byte) []byte {
	b = appendHeader(b, KindJSON, len(js))
	return append(b, js...)
}

// appendObs appends the float32 values of o flattened (app, server, task)
// with no header.
func appendObs(b []byte, o env.Observation) []byte {
	for _, part := range [3][]float64{o.App, o.Server, o.Task} {
		for _, x := range part {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
		}
	}
	return b
}

// DecodeActions reads a step body: exactly one int64 section of
// numEnvs×len(nvec) entries, entry k of each env in [0, nvec[k]). It fills
// dst (resized) with the choices, env-major. Errors name the offending
// entry and wrap ErrMalformed (bad framing) or ErrBadAction (shape or
// range).
func DecodeActions(b []byte, numEnvs int, nvec []int, dst []int) ([]int, error) {
	secs, err := Decode(b, 1)
	if err != nil {
		return nil, err
	}
	want := numEnvs * len(nvec)
	switch {
	case len(secs) != 1:
		return nil, fmt.Errorf("%w: action body has no section, want one int64 section of %d entries", ErrBadAction, want)
	case secs[0].Kind != KindInt64:
		return nil, fmt.Errorf("%w: action section has kind %q, want %q (int64)", ErrBadAction, secs[0].Kind, KindInt64)
	case secs[0].N != want:
		if numEnvs == 1 {
			return nil, fmt.Errorf("%w: action has %d entries, want %d (one per task)", ErrBadAction, secs[0].N, want)
		}
		return nil, fmt.Errorf("%w: action has %d entries, want %d (%d envs × %d tasks)", ErrBadAction, secs[0].N, want, numEnvs, len(nvec))
	}
	dst = dst[:0]
	data := secs[0].Data
	for i := range want {
		v := int64(binary.LittleEndian.Uint64(data[8*i:]))
		k := i % len(nvec)
		if v < 0 || v >= int64(nvec[k]) {
			if numEnvs == 1 {
				return nil, fmt.Errorf("%w: action entry %d is %d, want 0..%d", ErrBadAction, k, v, nvec[k]-1)
			}
			return nil, fmt.Errorf("%w: env %d action entry %d is %d, want 0..%d", ErrBadAction, i/len(nvec), k, v, nvec[k]-1)
		}
		dst = append(dst, int(v))
	}
	return dst, nil
}
