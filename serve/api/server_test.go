package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"streamscale/env"
	"streamscale/ppo/policy"
	"streamscale/serve/internal/fixture"
)

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Dir: "x", AdminToken: "short"},
		{Dir: "x", MaxBodyBytes: 10},
		{Dir: "x", MaxBatch: -1},
	} {
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "api: ") {
			t.Errorf("%+v: error %v", cfg, err)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	dir := testDir(t)
	s, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if w := do(s, "GET", "/healthz", nil); w.Code != 200 {
		t.Fatalf("healthz %d", w.Code)
	}
	if w := do(s, "GET", "/readyz", nil); w.Code != 503 {
		t.Fatalf("readyz before load: %d", w.Code)
	}
	if w := do(s, "GET", "/v1/policies", nil); w.Code != 503 {
		t.Fatalf("policies before load: %d", w.Code)
	}
	if w := do(s, "POST", "/v1/policies/pred/act", []byte(`{}`)); w.Code != 503 {
		t.Fatalf("act before load: %d", w.Code)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	w := do(s, "GET", "/readyz", nil)
	if w.Code != 200 || w.Body.String() != `{"status":"ready","policies":2}` {
		t.Fatalf("readyz after load: %d %s", w.Code, w.Body)
	}
}

func TestPolicies(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	w := do(s, "GET", "/v1/policies", nil)
	okStatus(t, w)
	type list struct {
		Policies []policyInfo `json:"policies"`
	}
	got := decodeJSON[list](t, w)
	if len(got.Policies) != 2 || got.Policies[0].Name != "etl" || got.Policies[1].Name != "pred" {
		t.Fatalf("policies %+v", got.Policies)
	}
	for _, p := range got.Policies {
		_, card := readPolicy(t, dir, p.Name)
		sp := card.Spaces
		if p.Version != card.WeightsSHA256 || p.Profile != p.Name || p.Observation.Size != sp.FlatSize() ||
			len(p.Action.Nvec) != len(sp.Nvec) || len(p.Action.DeltaMillicores) != 5 ||
			len(p.Observation.Boxes["task"].High) != sp.Observation["task"].Size() ||
			strings.Join(p.Observation.Keys, ",") != "app,server,task" {
			t.Fatalf("policy %+v", p)
		}
	}
	if got.Policies[0].Observation.Size != 181 || len(got.Policies[0].Action.Nvec) != 9 {
		t.Fatalf("etl layout %d / %d", got.Policies[0].Observation.Size, len(got.Policies[0].Action.Nvec))
	}
}

// Every kind of bad input gets its status, a JSON error naming the field,
// an errors_total increment, and changes nothing.
func TestBadInput(t *testing.T) {
	s := newTestServer(t, "", testToken)
	o, err := fixture.Observation("pred")
	if err != nil {
		t.Fatal(err)
	}
	good := mustJSON(t, map[string]any{"observation": toWire(o)})
	before := do(s, "POST", "/v1/policies/pred/act", good)
	okStatus(t, before)
	reg := s.reg.Load()

	long := append([]float64(nil), o.Task...)
	long = append(long, 0)
	outOfBounds := append([]float64(nil), o.Server...)
	outOfBounds[3] = 31
	big := bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1)
	copy(big, good)
	var many []wireObs
	for range DefaultMaxBatch + 1 {
		many = append(many, toWire(o))
	}
	cases := []struct {
		name, method, path string
		body               []byte
		hdr                []string
		status             int
		field              string
	}{
		{"malformed", "POST", "/v1/policies/pred/act", []byte(`{"observation":`), nil, 400, ""},
		{"not an object", "POST", "/v1/policies/pred/act", []byte(`[1,2]`), nil, 400, "body"},
		{"missing key", "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": map[string]any{"app": o.App, "server": o.Server}}), nil, 400, "observation.task"},
		{"unknown field", "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": toWire(o), "temperature": 1}), nil, 400, "temperature"},
		{"NaN string", "POST", "/v1/policies/pred/act", bytes.Replace(good, []byte(`"app":[`), []byte(`"app":["NaN",`), 1), nil, 400, "observation.app[0]"},
		{"wrong length", "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": wireObs{o.App, o.Server, long}}), nil, 422, "observation.task"},
		{"out of bounds", "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": wireObs{o.App, outOfBounds, o.Task}}), nil, 422, "observation.server[3]"},
		{"too large", "POST", "/v1/policies/pred/act", big, nil, 413, ""},
		{"batch too large", "POST", "/v1/policies/pred/act/batch", mustJSON(t, map[string]any{"observations": many}), nil, 413, "observations"},
		{"media type", "POST", "/v1/policies/pred/act", good, []string{"Content-Type", "text/plain"}, 415, ""},
		{"unknown policy", "POST", "/v1/policies/nope/act", good, nil, 404, "name"},
		{"unknown route", "GET", "/v2/whatever", nil, nil, 404, ""},
		{"wrong method", "GET", "/v1/policies/pred/act", nil, nil, 405, ""},
		{"wrong method list", "DELETE", "/v1/policies", nil, nil, 405, ""},
		{"no token", "POST", "/admin/reload", nil, nil, 401, ""},
		{"wrong token", "POST", "/admin/reload", nil, []string{"Authorization", "Bearer " + testToken + "x"}, 401, ""},
		{"wrong scheme", "POST", "/admin/reload", nil, []string{"Authorization", "Basic " + testToken}, 401, ""},
	}
	for _, c := range cases {
		w := do(s, c.method, c.path, c.body, c.hdr...)
		if w.Code != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, w.Code, c.status, w.Body)
			continue
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
		e := decodeJSON[wireError](t, w)
		if e.Field != c.field || !strings.HasPrefix(e.Error, "api: ") {
			t.Errorf("%s: %+v, want field %q", c.name, e, c.field)
		}
		if c.status == 405 && w.Header().Get("Allow") == "" {
			t.Errorf("%s: no Allow header", c.name)
		}
		if c.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate header", c.name)
		}
	}
	if s.reg.Load() != reg {
		t.Fatal("bad input replaced the registry")
	}
	after := do(s, "POST", "/v1/policies/pred/act", good)
	if after.Body.String() != before.Body.String() {
		t.Fatalf("answer changed: %s, then %s", before.Body, after.Body)
	}
	m := do(s, "GET", "/metrics", nil).Body.String()
	for _, line := range []string{
		`streamscale_serve_errors_total{kind="bad_json"} 1`,
		`streamscale_serve_errors_total{kind="bad_request"} 4`,
		`streamscale_serve_errors_total{kind="invalid_observation"} 2`,
		`streamscale_serve_errors_total{kind="body_too_large"} 1`,
		`streamscale_serve_errors_total{kind="batch_too_large"} 1`,
		`streamscale_serve_errors_total{kind="unsupported_media_type"} 1`,
		`streamscale_serve_errors_total{kind="policy_not_found"} 1`,
		`streamscale_serve_errors_total{kind="route_not_found"} 1`,
		`streamscale_serve_errors_total{kind="method_not_allowed"} 2`,
		`streamscale_serve_errors_total{kind="unauthorized"} 3`,
		`streamscale_serve_requests_total{code="200",route="/v1/policies/:name/act"} 2`,
		`streamscale_serve_requests_total{code="422",route="/v1/policies/:name/act"} 2`,
		`streamscale_serve_requests_total{code="405",route="unmatched"} 2`,
	} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// A body larger than the limit is refused whether or not it announces its
// length.
func TestBodyLimitStreaming(t *testing.T) {
	s := newTestServer(t, "", "")
	body := io.MultiReader(strings.NewReader(`{"observation":{"app":[`), strings.NewReader(strings.Repeat("0,", DefaultMaxBodyBytes)))
	req := httptest.NewRequest("POST", "/v1/policies/pred/act", body)
	req.ContentLength = -1
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	if w.Code != 413 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
}

// Handlers never panic on purpose, but if one does, gin's recovery
// answers 500 in the error format and counts it.
func TestRecovery(t *testing.T) {
	s := newTestServer(t, "", "")
	s.engine.GET("/panic", func(*gin.Context) { panic("boom") })
	w := do(s, "GET", "/panic", nil)
	if w.Code != 500 || !strings.Contains(w.Body.String(), `"error":"api: internal error"`) {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if m := do(s, "GET", "/metrics", nil).Body.String(); !strings.Contains(m, `streamscale_serve_errors_total{kind="internal"} 1`) {
		t.Fatal("panic not counted")
	}
}

func TestAdminReload(t *testing.T) {
	dir := testDir(t)
	if w := do(newTestServer(t, dir, ""), "POST", "/admin/reload", nil, "Authorization", "Bearer "+testToken); w.Code != 404 {
		t.Fatalf("admin route without a configured token: %d", w.Code)
	}
	s := newTestServer(t, dir, testToken)
	s.now = tickingClock(time.Second) // past the reload rate limit every time
	auth := []string{"Authorization", "Bearer " + testToken}
	v0 := s.Policies()

	// A new version of etl and a new policy appear.
	if _, err := fixture.Write(dir, "etl", "etl", 64, 77); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.Write(dir, "etl-b", "etl", 32, 78); err != nil {
		t.Fatal(err)
	}
	w := do(s, "POST", "/admin/reload", nil, auth...)
	okStatus(t, w)
	v1 := s.Policies()
	if len(v1) != 3 || v1["etl"] == v0["etl"] || v1["pred"] != v0["pred"] {
		t.Fatalf("after reload %v (before %v)", v1, v0)
	}
	if !strings.Contains(w.Body.String(), `"name":"etl-b"`) {
		t.Fatalf("reload response %s", w.Body)
	}

	// Corrupt weights: the reload fails and the old set stays.
	reg := s.reg.Load()
	wpath := filepath.Join(dir, "pred", policy.FileName+".safetensors")
	b, err := os.ReadFile(wpath)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(wpath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	w = do(s, "POST", "/admin/reload", nil, auth...)
	if w.Code != 500 || !strings.Contains(w.Body.String(), "current policies kept") || !strings.Contains(w.Body.String(), "sha256") {
		t.Fatalf("corrupt reload: %d %s", w.Code, w.Body)
	}
	if s.reg.Load() != reg {
		t.Fatal("failed reload replaced the registry")
	}
	// A card that does not parse fails too.
	if err := os.WriteFile(filepath.Join(dir, "etl-b", policy.FileName+".json"), []byte(`{"format":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || s.reg.Load() != reg {
		t.Fatalf("reload of a broken card: %v", err)
	}
	m := do(s, "GET", "/metrics", nil).Body.String()
	for _, line := range []string{
		`streamscale_serve_reloads_total{result="ok"} 2`,
		`streamscale_serve_reloads_total{result="error"} 2`,
		`streamscale_serve_policies_loaded 3`,
		`streamscale_serve_ready 1`,
	} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// Requests racing a reload see either the old or the new set, never a mix
// or an error (run with -race).
func TestConcurrentActAndReload(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	o, err := fixture.Observation("etl")
	if err != nil {
		t.Fatal(err)
	}
	body := mustJSON(t, map[string]any{"observation": toWire(o), "probabilities": true})
	want := map[string]string{}
	for i, seed := range []uint64{2, 5} {
		if i > 0 {
			if _, err := fixture.Write(dir, "etl", "etl", 64, seed); err != nil {
				t.Fatal(err)
			}
			if err := s.Reload(); err != nil {
				t.Fatal(err)
			}
		}
		w := do(s, "POST", "/v1/policies/etl/act", body)
		okStatus(t, w)
		b := w.Body.String()
		r := decodeJSON[wireResult](t, w)
		want[r.Version] = b
	}
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for g := range 4 {
		wg.Go(func() {
			for range 25 {
				w := do(s, "POST", "/v1/policies/etl/act", body)
				var r wireResult
				if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || w.Code != http.StatusOK || want[r.Version] != w.Body.String() {
					got, exp := w.Body.String(), want[r.Version]
					k := 0
					for k < min(len(got), len(exp)) && got[k] == exp[k] {
						k++
					}
					errs <- fmt.Sprintf("%d at %d: got %.80s want %.80s (len %d %d)", w.Code, k, got[max(0, k-40):], exp[max(0, k-40):], len(got), len(exp))
					return
				}
			}
			_ = g
		})
	}
	for i := range 4 {
		seed := []uint64{2, 5}[i%2]
		if _, err := fixture.Write(dir, "etl", "etl", 64, seed); err != nil {
			t.Fatal(err)
		}
		s.Reload() //nolint:errcheck // a reload racing the file writes may fail; the set must stay consistent
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("inconsistent answer %s", e)
	}
}

// TestContentEncodingAndCharset: a body in a content encoding or charset
// the server does not decode is a 415 naming it, on every route that
// takes a body; identity and utf-8 are accepted.
func TestContentEncodingAndCharset(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	_, card := readPolicy(t, dir, "pred")
	o := testObservations(t, "pred", card.Spaces, 1)[0]
	bodies := map[string][]byte{
		"/v1/policies/pred/act":       mustJSON(t, map[string]any{"observation": toWire(o)}),
		"/v1/policies/pred/act/batch": mustJSON(t, map[string]any{"observations": []wireObs{toWire(o)}}),
		"/v2/models/pred/infer":       mustJSON(t, map[string]any{"inputs": v2Inputs(card.Spaces, []env.Observation{o}, false)}),
	}
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
		inMsg  string
	}{
		{"gzip", []string{"Content-Encoding", "gzip"}, 415, `Content-Encoding "gzip" is not supported`},
		{"identity then br", []string{"Content-Encoding", "identity, br"}, 415, `Content-Encoding "br"`},
		{"latin-1", []string{"Content-Type", "application/json; charset=iso-8859-1"}, 415, `charset "iso-8859-1" is not supported`},
		{"utf-16 quoted", []string{"Content-Type", `application/json; charset="utf-16"`}, 415, `charset "utf-16"`},
		{"identity", []string{"Content-Encoding", "identity"}, 200, ""},
		{"UTF-8", []string{"Content-Type", "application/json; charset=UTF-8"}, 200, ""},
		{"quoted utf-8 among parameters", []string{"Content-Type", `application/json; foo=bar; charset="utf-8"`}, 200, ""},
	} {
		for path, body := range bodies {
			req := httptest.NewRequest("POST", path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(tc.hdr[0], tc.hdr[1])
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, req)
			var e wireError
			if tc.status != 200 {
				json.Unmarshal(w.Body.Bytes(), &e) //nolint:errcheck // an empty message fails below
			}
			if w.Code != tc.status || !strings.Contains(e.Error, tc.inMsg) {
				t.Errorf("%s %s: %d %s, want %d naming %q", tc.name, path, w.Code, w.Body, tc.status, tc.inMsg)
			}
		}
	}
}

// tickingClock returns a clock that advances by step at every reading.
func tickingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Unix(1e9, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

// TestReloadRateLimited: an admin reload within Config.ReloadInterval of
// the last one's start is a 429 with Retry-After (whole seconds, rounded
// up) and reloads nothing; after the interval it runs; a negative
// interval disables the limit. The clock is the server's, set here.
func TestReloadRateLimited(t *testing.T) {
	dir := testDir(t)
	auth := []string{"Authorization", "Bearer " + testToken}
	s := newTestServer(t, dir, testToken)
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	okStatus(t, do(s, "POST", "/admin/reload", nil, auth...))
	for _, tc := range []struct {
		after      time.Duration
		status     int
		retryAfter string
	}{
		{0, 429, "1"},
		{300 * time.Millisecond, 429, "1"},
		{999 * time.Millisecond, 429, "1"},
		{time.Second, 200, ""},
		{time.Second + time.Nanosecond, 429, "1"},
		{2 * time.Second, 200, ""},
	} {
		now = time.Unix(1e9, 0).Add(tc.after)
		w := do(s, "POST", "/admin/reload", nil, auth...)
		if w.Code != tc.status || w.Header().Get("Retry-After") != tc.retryAfter {
			t.Fatalf("reload %v after the first: %d Retry-After %q, want %d %q: %s", tc.after, w.Code, w.Header().Get("Retry-After"), tc.status, tc.retryAfter, w.Body)
		}
	}
	m := do(s, "GET", "/metrics", nil).Body.String()
	for _, line := range []string{`streamscale_serve_errors_total{kind="too_many_reloads"} 4`, `streamscale_serve_reloads_total{result="ok"} 4`} {
		if !strings.Contains(m, line) {
			t.Errorf("metrics lack %s", line)
		}
	}

	// A longer interval rounds Retry-After up to whole seconds.
	s2, err := New(Config{Dir: dir, AdminToken: testToken, ReloadInterval: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s2.now = func() time.Time { return now }
	okStatus(t, do(s2, "POST", "/admin/reload", nil, auth...))
	now = now.Add(30*time.Second + time.Millisecond)
	if w := do(s2, "POST", "/admin/reload", nil, auth...); w.Code != 429 || w.Header().Get("Retry-After") != "60" {
		t.Fatalf("90 s interval, 30 s later: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}

	// No limit.
	s3, err := New(Config{Dir: dir, AdminToken: testToken, ReloadInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		okStatus(t, do(s3, "POST", "/admin/reload", nil, auth...))
	}
}
