package envserver

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode: Decode never panics, and what it accepts re-encodes to the
// same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(AppendInt64s(nil, []int64{0, 4, 2}))
	f.Add(AppendJSON(AppendBools(AppendFloat64s(AppendFloat32s(nil, []float32{1.5, -2}), []float64{3}), []bool{true, false}), []byte(`{"a":1}`)))
	f.Add([]byte{'i', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{'b', 1, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		secs, err := Decode(b, 8)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		var out []byte
		for _, s := range secs {
			switch s.Kind {
			case KindFloat32:
				out = appendHeader(out, s.Kind, s.N)
				out = append(out, s.Data...)
			case KindFloat64:
				out = AppendFloat64s(out, s.Float64s(nil))
			case KindInt64:
				out = AppendInt64s(out, s.Int64s(nil))
			case KindBool:
				out = AppendBools(out, s.Bools(nil))
			case KindJSON:
				out = AppendJSON(out, s.Data)
			}
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoded %x, decoded from %x", out, b)
		}
	})
}

// FuzzDecodeActions: the action decoder never panics and accepts only a
// single int64 section of the right length with every entry in range.
func FuzzDecodeActions(f *testing.F) {
	nvec := []int{5, 5, 5}
	f.Add(AppendInt64s(nil, []int64{0, 4, 2, 1, 1, 1}), 2)
	f.Add(AppendInt64s(nil, []int64{0, 5, 2}), 1)
	f.Add(AppendInt64s(nil, []int64{-1, 0, 0}), 1)
	f.Add([]byte{'i', 3, 0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 1 || n > 64 {
			return
		}
		got, err := DecodeActions(b, n, nvec, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadAction) {
				t.Fatalf("error %v wraps neither ErrMalformed nor ErrBadAction", err)
			}
			return
		}
		if len(got) != n*len(nvec) {
			t.Fatalf("%d choices for %d envs", len(got), n)
		}
		for i, c := range got {
			if c < 0 || c >= nvec[i%len(nvec)] {
				t.Fatalf("choice %d = %d accepted", i, c)
			}
		}
	})
}
