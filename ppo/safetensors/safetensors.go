package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// MaxHeader bounds the JSON header Decode accepts (100 MB, as the
// reference implementation).
const MaxHeader = 100 << 20

// ErrFormat is returned (wrapped) for malformed input.
var ErrFormat = errors.New("safetensors: malformed file")

var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// Tensor is one named tensor: Data holds the raw little-endian bytes.
type Tensor struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// F32 returns a float32 tensor of the given shape.
func F32(name string, shape []int, v []float32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: "F32", Shape: append([]int(nil), shape...), Data: b}
}

// Float32s decodes an F32 tensor's data.
func (t Tensor) Float32s() ([]float32, error) {
	if t.DType != "F32" {
		return nil, fmt.Errorf("safetensors: tensor %q is %s, want F32", t.Name, t.DType)
	}
	v := make([]float32, len(t.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return v, nil
}

// F64 returns a float64 tensor of the given shape.
func F64(name string, shape []int, v []float64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return Tensor{Name: name, DType: "F64", Shape: append([]int(nil), shape...), Data: b}
}

// Float64s decodes an F64 tensor's data.
func (t Tensor) Float64s() ([]float64, error) {
	if t.DType != "F64" {
		return nil, fmt.Errorf("safetensors: tensor %q is %s, want F64", t.Name, t.DType)
	}
	v := make([]float64, len(t.Data)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return v, nil
}

type entry struct {
	DType       string `json:"dtype"`
	Shape       []int  `json:"shape"`
	DataOffsets [2]int `json:"data_offsets"`
}

// Encode writes tensors (sorted by name) and metadata to w.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	ts := slices.Clone(tensors)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := 0
	for i, t := range ts {
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if i > 0 && ts[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: duplicate tensor %q", t.Name)
		}
		if err := checkSize(t.DType, t.Shape, len(t.Data)); err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		header[t.Name] = entry{DType: t.DType, Shape: t.Shape, DataOffsets: [2]int{off, off + len(t.Data)}}
		off += len(t.Data)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if pad := (8 - len(h)%8) % 8; pad > 0 {
		h = append(h, bytes.Repeat([]byte(" "), pad)...)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(h)))
	parts := [][]byte{n[:], h}
	for _, t := range ts {
		parts = append(parts, t.Data)
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return fmt.Errorf("safetensors: %w", err)
		}
	}
	return nil
}

// checkSize reports whether a dtype/shape pair describes n bytes.
func checkSize(dtype string, shape []int, n int) error {
	size, ok := dtypeSize[dtype]
	if !ok {
		return fmt.Errorf("unknown dtype %q", dtype)
	}
	elems := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d > 0 && elems > math.MaxInt/8/d {
			return fmt.Errorf("shape %v is too large", shape)
		}
		elems *= d
	}
	if elems*size != n {
		return fmt.Errorf("shape %v of %s needs %d bytes, has %d", shape, dtype, elems*size, n)
	}
	return nil
}

// Decode parses a safetensors file. Tensors come back sorted by name;
// their Data alias b.
func Decode(b []byte) ([]Tensor, map[string]string, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("%w: %d bytes is shorter than the header length", ErrFormat, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeader || n > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("%w: header length %d exceeds the file (%d bytes) or %d", ErrFormat, n, len(b), MaxHeader)
	}
	hdr := b[8 : 8+n]
	data := b[8+n:]
	if len(bytes.TrimSpace(hdr)) == 0 || bytes.TrimLeft(hdr, " ")[0] != '{' {
		return nil, nil, fmt.Errorf("%w: header is not a JSON object", ErrFormat)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	var meta map[string]string
	var ts []Tensor
	var spans [][2]int
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, fmt.Errorf("%w: metadata: %v", ErrFormat, err)
			}
			continue
		}
		if name == "" {
			return nil, nil, fmt.Errorf("%w: empty tensor name", ErrFormat)
		}
		var e entry
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		if e.Shape == nil || !strings.HasPrefix(strings.TrimSpace(string(msg)), "{") {
			return nil, nil, fmt.Errorf("%w: tensor %q has no shape", ErrFormat, name)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin || end > len(data) {
			return nil, nil, fmt.Errorf("%w: tensor %q offsets [%d, %d) outside the %d data bytes", ErrFormat, name, begin, end, len(data))
		}
		if err := checkSize(e.DType, e.Shape, end-begin); err != nil {
			return nil, nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		ts = append(ts, Tensor{Name: name, DType: e.DType, Shape: e.Shape, Data: data[begin:end:end]})
		spans = append(spans, [2]int{begin, end})
	}
	// The byte ranges must tile the data section.
	sort.Slice(spans, func(i, j int) bool {
		if spans[i][0] != spans[j][0] {
			return spans[i][0] < spans[j][0]
		}
		return spans[i][1] < spans[j][1]
	})
	pos := 0
	for _, s := range spans {
		if s[0] != pos {
			return nil, nil, fmt.Errorf("%w: data bytes [%d, %d) overlap or leave a gap", ErrFormat, min(pos, s[0]), max(pos, s[0]))
		}
		pos = s[1]
	}
	if pos != len(data) {
		return nil, nil, fmt.Errorf("%w: %d data bytes not covered by any tensor", ErrFormat, len(data)-pos)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts, meta, nil
}
