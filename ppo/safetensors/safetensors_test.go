package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func sample() []Tensor {
	return []Tensor{
		F32("b.weight", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
		F32("a.bias", []int{2}, []float32{-1, 0.5}),
		{Name: "empty", DType: "F64", Shape: []int{0, 4}, Data: nil},
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample(), map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if n := binary.LittleEndian.Uint64(b); n%8 != 0 {
		t.Errorf("header length %d not a multiple of 8", n)
	}
	ts, meta, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if meta["format"] != "pt" || len(ts) != 3 || ts[0].Name != "a.bias" || ts[1].Name != "b.weight" {
		t.Fatalf("decoded %v %v", ts, meta)
	}
	v, err := ts[1].Float32s()
	if err != nil || len(v) != 6 || v[5] != 6 {
		t.Fatalf("weights %v %v", v, err)
	}
	// Same input, same bytes.
	var again bytes.Buffer
	if err := Encode(&again, sample(), map[string]string{"format": "pt"}); err != nil || !bytes.Equal(again.Bytes(), b) {
		t.Fatal("encoding is not deterministic")
	}
}

func TestDecodeRejects(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample(), nil); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	hdr := func(s string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
		return append(b, s...)
	}
	for name, b := range map[string][]byte{
		"short":       good[:5],
		"huge header": binary.LittleEndian.AppendUint64(nil, 1<<40),
		"truncated":   good[:len(good)-4],
		"trailing":    append(append([]byte(nil), good...), 0),
		"not object":  hdr("[1,2]"),
		"bad dtype":   append(hdr(`{"x":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}`), 0, 0, 0, 0),
		"bad shape":   append(hdr(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`), 0, 0, 0, 0),
		"negative":    append(hdr(`{"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`), 0, 0, 0, 0),
		"overlap":     append(hdr(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`), 0, 0, 0, 0),
		"gap":         append(hdr(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`), 0, 0, 0, 0, 0, 0, 0, 0),
		"extra field": append(hdr(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"z":1}}`), 0, 0, 0, 0),
		"no shape":    append(hdr(`{"x":{"dtype":"F32","data_offsets":[0,4]}}`), 0, 0, 0, 0),
	} {
		if _, _, err := Decode(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
	if err := Encode(&bytes.Buffer{}, []Tensor{{Name: "x", DType: "F32", Shape: []int{3}, Data: make([]byte, 4)}}, nil); err == nil || !strings.Contains(err.Error(), "needs 12 bytes") {
		t.Errorf("encode of inconsistent tensor: %v", err)
	}
}

// FuzzDecode: Decode never panics, and what it accepts re-encodes to a
// file it accepts again with the same tensors.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample(), map[string]string{"k": "v"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, meta, err := Decode(b)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Encode(&out, ts, meta); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		ts2, _, err := Decode(out.Bytes())
		if err != nil || len(ts2) != len(ts) {
			t.Fatalf("re-decode: %v", err)
		}
		for i := range ts {
			if ts[i].Name != ts2[i].Name || !bytes.Equal(ts[i].Data, ts2[i].Data) {
				t.Fatalf("tensor %d changed", i)
			}
		}
	})
}

// TestF64RoundTrip: F64 tensors keep every bit; Float32s refuses them.
func TestF64RoundTrip(t *testing.T) {
	v := []float64{0, -1.5, math.Pi, math.SmallestNonzeroFloat64, math.MaxFloat64}
	var buf bytes.Buffer
	if err := Encode(&buf, []Tensor{F64("obs_rms.mean", []int{5}, v)}, nil); err != nil {
		t.Fatal(err)
	}
	ts, _, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ts[0].Float64s()
	if err != nil || len(got) != len(v) {
		t.Fatalf("%v, %v", got, err)
	}
	for i := range v {
		if math.Float64bits(got[i]) != math.Float64bits(v[i]) {
			t.Errorf("element %d: %v, want %v", i, got[i], v[i])
		}
	}
	if _, err := ts[0].Float32s(); err == nil {
		t.Error("F64 tensor decoded as F32")
	}
}
