package api

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"streamscale/env"
	"streamscale/ppo/policy"
	"streamscale/serve/internal/fixture"
)

const testToken = "0123456789abcdef-test-token"

// testDir writes random pred and etl policies (hidden 64, the trained
// shape) into a temporary directory.
func testDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for i, p := range []string{"pred", "etl"} {
		if _, err := fixture.Write(dir, p, p, 64, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newTestServer returns a loaded server over dir (testDir when empty).
func newTestServer(t testing.TB, dir, token string) *Server {
	t.Helper()
	if dir == "" {
		dir = testDir(t)
	}
	s, err := New(Config{Dir: dir, AdminToken: token})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	return s
}

// readPolicy loads the artifact of name from dir the way ppo users do.
func readPolicy(t testing.TB, dir, name string) (*policy.Policy, *policy.Card) {
	t.Helper()
	p, c, err := policy.Read(os.DirFS(filepath.Join(dir, name)), policy.FileName)
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// do sends one request to the handler and returns the recorder.
func do(s *Server, method, path string, body []byte, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w
}

type wireObs struct {
	App    []float64 `json:"app"`
	Server []float64 `json:"server"`
	Task   []float64 `json:"task"`
}

func toWire(o env.Observation) wireObs { return wireObs{o.App, o.Server, o.Task} }

type wireResult struct {
	Action        []int       `json:"action"`
	Deltas        []float64   `json:"deltas"`
	Value         float64     `json:"value"`
	Version       string      `json:"version"`
	Probabilities [][]float64 `json:"probabilities"`
}

type wireError struct {
	Error string `json:"error"`
	Field string `json:"field"`
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeJSON[T any](t testing.TB, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %T: %v", v, err)
	}
	return v
}

// randomObs draws an observation uniformly inside the spaces' bounds.
func randomObs(sp env.Spaces, rng *rand.Rand) env.Observation {
	draw := func(key string) []float64 {
		b := sp.Observation[key]
		x := make([]float64, b.Size())
		for i := range x {
			x[i] = b.Low[i] + rng.Float64()*(b.High[i]-b.Low[i])
		}
		return x
	}
	return env.Observation{App: draw("app"), Server: draw("server"), Task: draw("task")}
}

func okStatus(t testing.TB, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
}
