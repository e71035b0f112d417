package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"streamscale/serve/internal/fixture"
)

// reusable is a request body that can be rewound without allocating.
type reusable struct{ bytes.Reader }

func (*reusable) Close() error { return nil }

// sink is a ResponseWriter that keeps nothing but the status.
type sink struct {
	h    http.Header
	code int
	n    int
}

func (w *sink) Header() http.Header         { return w.h }
func (w *sink) WriteHeader(code int)        { w.code = code }
func (w *sink) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// handlerLoop returns a function that sends body to path through the
// handler, reusing the request and writer, and checks the status.
func handlerLoop(tb testing.TB, s *Server, path string, body []byte) func() {
	var rb reusable
	req := httptest.NewRequest("POST", path, nil)
	req.Header.Set("Content-Type", "application/json")
	req.Body = &rb
	req.ContentLength = int64(len(body))
	w := &sink{h: http.Header{}}
	h := s.Handler()
	return func() {
		rb.Reset(body)
		w.code = 0
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK {
			tb.Fatalf("status %d", w.code)
		}
	}
}

func actBody(tb testing.TB, profile string, extra map[string]any) []byte {
	o, err := fixture.Observation(profile)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]any{"observation": toWire(o)}
	for k, v := range extra {
		m[k] = v
	}
	return mustJSON(tb, m)
}

// The act path allocates nothing once the pools are warm: not in gin,
// not in decoding, inference or encoding.
func TestActDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race; allocation counts are meaningless")
	}
	s := newTestServer(t, residualDir(t, 0), "")
	rt := []float64{900, 1000, 1100, 1200, 1300, 1400}
	for _, c := range []struct {
		policy string
		extra  map[string]any
	}{
		{"etl", nil}, {"etl", map[string]any{"sample": true, "seed": 3}}, {"etl", map[string]any{"probabilities": true}},
		{"res", map[string]any{"rule_targets": rt}}, {"res", map[string]any{"rule_targets": rt, "probabilities": true}},
	} {
		profile := c.policy
		if profile == "res" {
			profile = "pred"
		}
		run := handlerLoop(t, s, "/v1/policies/"+c.policy+"/act", actBody(t, profile, c.extra))
		run()
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Errorf("%s %v: %v allocations per request", c.policy, c.extra, n)
		}
	}
}

// BenchmarkAct is one single-observation act request through the gin
// handler, in process (no network): decode, infer, encode.
func BenchmarkAct(b *testing.B) {
	s := newTestServer(b, "", "")
	for _, c := range []struct {
		name  string
		extra map[string]any
	}{
		{"etl", nil},
		{"etl-sample", map[string]any{"sample": true, "seed": 3}},
		{"etl-probabilities", map[string]any{"probabilities": true}},
		{"pred", nil},
	} {
		profile := c.name[:3]
		if c.name == "pred" {
			profile = "pred"
		}
		body := actBody(b, profile, c.extra)
		run := handlerLoop(b, s, "/v1/policies/"+profile+"/act", body)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				run()
			}
		})
	}
}

// BenchmarkActBatch is one batch request of 32 observations.
func BenchmarkActBatch(b *testing.B) {
	s := newTestServer(b, "", "")
	o, err := fixture.Observation("etl")
	if err != nil {
		b.Fatal(err)
	}
	obs := make([]wireObs, 32)
	for i := range obs {
		obs[i] = toWire(o)
	}
	body := mustJSON(b, map[string]any{"observations": obs})
	run := handlerLoop(b, s, "/v1/policies/etl/act/batch", body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32, "ns/observation")
}

// BenchmarkDecodeAct is the request decoder alone on a real ETL body.
func BenchmarkDecodeAct(b *testing.B) {
	s := newTestServer(b, "", "")
	e := s.reg.Load().byName["etl"]
	body := actBody(b, "etl", nil)
	var req actRequest
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := decodeAct(body, &e.lay, false, DefaultMaxBatch, &req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkActHTTP is the full stack in one process: net/http client and
// server over loopback (httptest.Server), keep-alive, parallel clients.
func BenchmarkActHTTP(b *testing.B) {
	s := newTestServer(b, "", "")
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	body := actBody(b, "etl", nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := srv.URL + "/v1/policies/etl/act"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body) //nolint:errcheck
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

// BenchmarkDecodeActEncodingJSON is the same body through encoding/json
// into a reused struct, for comparison with BenchmarkDecodeAct (it checks
// neither lengths nor bounds).
func BenchmarkDecodeActEncodingJSON(b *testing.B) {
	body := actBody(b, "etl", nil)
	var req reference
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req.Observation = nil
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			b.Fatal(err)
		}
	}
}
