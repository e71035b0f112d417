package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// The decoder question: would a JSON library do the hand-written decoder's
// job? libAct decodes an act request with a library into a reused struct
// and then does what decodeAct does besides parsing (lengths, flattening,
// bounds), so the benchmarks below compare the same work. The library
// must be as strict: unknown and duplicate keys refused, keys matched
// case-sensitively, "NaN" strings refused, out-of-range numbers refused,
// trailing data refused. encoding/json (v1) is not (it accepts duplicate
// keys and matches keys case-insensitively); encoding/json/v2
// (GOEXPERIMENT=jsonv2, decodelib_v2_test.go) is by default.

type libObs struct {
	App    []float64 `json:"app"`
	Server []float64 `json:"server"`
	Task   []float64 `json:"task"`
}

type libRequest struct {
	Observation   libObs  `json:"observation"`
	Deterministic *bool   `json:"deterministic"`
	Sample        *bool   `json:"sample"`
	Seed          *uint64 `json:"seed"`
	Probabilities *bool   `json:"probabilities"`
}

// libAct fills req from v as decodeAct would (single observation,
// options omitted from the comparison: the bodies have none).
func libAct(v *libRequest, lay *layout, req *actRequest) *reqError {
	if cap(req.obs) < lay.size {
		req.obs = make([]float64, lay.size)
	}
	req.obs = req.obs[:lay.size]
	req.n = 1
	for k, x := range [numKeys][]float64{v.Observation.App, v.Observation.Server, v.Observation.Task} {
		if len(x) != lay.n[k] {
			return newError(kindInvalid, "observation."+keyNames[k], "observation.%s has %d values, want %d", keyNames[k], len(x), lay.n[k])
		}
		copy(req.obs[lay.off[k]:], x)
	}
	return checkBounds(req, lay, false)
}

// benchDecoders runs the hand-written decoder and each of decoders on the
// act bodies of both profiles.
func benchDecoders(b *testing.B, decoders map[string]func(body []byte, v *libRequest) error) {
	s := newTestServer(b, "", "")
	for _, profile := range []string{"pred", "etl"} {
		e := s.reg.Load().byName[profile]
		body := actBody(b, profile, nil)
		b.Run(profile+"/handwritten", func(b *testing.B) {
			var req actRequest
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := decodeAct(body, &e.lay, false, DefaultMaxBatch, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
		for name, dec := range decoders {
			b.Run(profile+"/"+name, func(b *testing.B) {
				var v libRequest
				var req actRequest
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if err := dec(body, &v); err != nil {
						b.Fatal(err)
					}
					if err := libAct(&v, &e.lay, &req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

var errTrailing = errors.New("data after the top-level value")

// v1Decode is encoding/json as strict as it goes: DisallowUnknownFields
// and a check for trailing data (duplicate keys and case-insensitive key
// matching remain).
func v1Decode(body []byte, v *libRequest) error {
	*v = libRequest{Observation: libObs{v.Observation.App[:0], v.Observation.Server[:0], v.Observation.Task[:0]}}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errTrailing
	}
	return nil
}

// BenchmarkDecodeLibraries compares the hand-written decoder with JSON
// libraries on the act bodies of both profiles:
//
//	go test ./serve/api -run '^$' -bench DecodeLibraries -benchmem -count 5
//	GOEXPERIMENT=jsonv2 go test ./serve/api -run '^$' -bench DecodeLibraries -benchmem -count 5
func BenchmarkDecodeLibraries(b *testing.B) {
	decoders := map[string]func([]byte, *libRequest) error{"encoding-json-v1": v1Decode}
	for name, d := range extraDecoders {
		decoders[name] = d
	}
	benchDecoders(b, decoders)
}

// extraDecoders are added by files built under build tags (jsonv2).
var extraDecoders = map[string]func([]byte, *libRequest) error{}

// The strictness the library must match, checked where it applies.
func TestLibraryStrictness(t *testing.T) {
	decoders := map[string]func([]byte, *libRequest) error{}
	for name, d := range extraDecoders {
		decoders[name] = d
	}
	if len(decoders) == 0 {
		t.Skip("no strict library in this build (GOEXPERIMENT=jsonv2 adds encoding/json/v2)")
	}
	ok := `{"app":[1,2],"server":[3,4],"task":[5,6,7]}`
	for name, dec := range decoders {
		for _, body := range []string{
			`{"observation":` + ok + `,"extra":1}`,
			`{"Observation":` + ok + `}`,
			`{"observation":` + ok + `,"observation":` + ok + `}`,
			`{"observation":{"app":[1,2],"server":[3,4],"task":[5,"NaN",7]}}`,
			`{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,1e999]}}`,
			`{"observation":` + ok + `} x`,
		} {
			v := libRequest{Observation: libObs{[]float64{}, []float64{}, []float64{}}}
			if err := dec([]byte(body), &v); err == nil {
				t.Errorf("%s accepts %s", name, body)
			}
		}
	}
}
