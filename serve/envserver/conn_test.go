package envserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestConnectionOwnsEnvs: an instance belongs to the connection that
// created it. Another connection cannot reset, step or delete it by id
// (ids are per connection, so it names its own or none), and when the
// creating connection closes without a DELETE (a crashed client) its
// envs are freed at once, not after the idle timeout.
func TestConnectionOwnsEnvs(t *testing.T) {
	s, ts, closed := newTestServerConns(t, Config{MaxEnvs: 4, MaxEnvsPerConn: 4})
	a, b := newClient(ts), newClient(ts)
	va, err := a.create(CreateRequest{Profile: "etl", NumEnvs: 3})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := a.create(CreateRequest{Profile: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	if va.ID != 1 || sa.ID != 2 {
		t.Fatalf("ids %d, %d on a fresh connection, want 1, 2", va.ID, sa.ID)
	}
	if _, err := a.reset(sa.ID, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.create(CreateRequest{Profile: "etl"}); code(err) != "too_many_envs" {
		t.Fatalf("create on a full server: %v, want too_many_envs", err)
	}
	for _, id := range []uint64{va.ID, sa.ID} {
		if _, err := b.reset(id, 1); code(err) != "unknown_env" {
			t.Errorf("reset of another connection's env %d: %v, want unknown_env", id, err)
		}
		if _, err := b.step(id, actionAt(0, len(sa.Spaces.Nvec))); code(err) != "unknown_env" {
			t.Errorf("step of another connection's env %d: %v, want unknown_env", id, err)
		}
		if err := b.close(id); code(err) != "unknown_env" {
			t.Errorf("delete of another connection's env %d: %v, want unknown_env", id, err)
		}
	}
	// The refusals changed nothing: a's env still steps, as a's.
	if _, err := a.step(sa.ID, actionAt(0, len(sa.Spaces.Nvec))); err != nil {
		t.Fatalf("owner's step after another connection's attempts: %v", err)
	}
	if st := s.Stats(); st.Envs != 4 || st.Conns != 2 {
		t.Fatalf("stats %+v, want 4 envs on 2 connections", st)
	}

	a.hangUp()
	<-closed
	if st := s.Stats(); st.Envs != 0 || st.Instances != 0 || st.Conns != 1 {
		t.Fatalf("after the creating connection closed: %+v, want no envs on 1 connection", st)
	}
	vb, err := b.create(CreateRequest{Profile: "etl", NumEnvs: 4})
	if err != nil {
		t.Fatalf("create after the full server's client hung up: %v", err)
	}
	if vb.ID != 1 {
		t.Fatalf("b's first id %d, want 1 (ids are per connection)", vb.ID)
	}
	// a comes back on a new connection: its old ids name nothing.
	if _, err := a.reset(sa.ID, 1); code(err) != "unknown_env" {
		t.Fatalf("old id on a new connection: %v, want unknown_env", err)
	}
}

// TestCreateWithoutConnection: a handler installed without
// Server.Configure (no connection in the request) refuses to create,
// rather than letting envs outlive every connection.
func TestCreateWithoutConnection(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := newPlainServer(t, s)
	c := newClient(ts)
	if _, err := c.create(CreateRequest{Profile: "etl"}); code(err) != "internal" {
		t.Fatalf("create without a connection: %v, want internal", err)
	}
	if st := s.Stats(); st.Envs != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestDuplicateKeys: a JSON body naming a key twice (also in another
// case: encoding/json matches fields case-insensitively) is refused with
// an error naming the key, and creates nothing.
func TestDuplicateKeys(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	c := newClient(ts)
	for _, tc := range []struct{ body, key string }{
		{`{"profile":"etl","profile":"pred"}`, `"profile"`},
		{`{"profile":"etl","Profile":"pred"}`, `"Profile"`},
		{`{"profile":"etl","num_envs":2,"placement_seeds":[1],"placement_seeds":[2]}`, `"placement_seeds"`},
		{`{"profile":"etl","steps":5,"rate_mult":1,"steps":6}`, `"steps"`},
		{"{\"profile\":\"etl\",\"trace\":\"taxi-train\",\"tra\\u0063e\":\"taxi-test\"}", `"trace"`},
	} {
		_, err := c.do("POST", "/v1/envs", "application/json", []byte(tc.body))
		if code(err) != "bad_request" || !containsAll(err.Error(), "duplicate key "+tc.key) {
			t.Errorf("%s: %v, want bad_request naming %s", tc.body, err, tc.key)
		}
	}
	if st := s.Stats(); st.Envs != 0 {
		t.Fatalf("refused creates left %+v", st)
	}
	cr, err := c.create(CreateRequest{Profile: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.do("POST", fmt.Sprintf("/v1/envs/%d/reset", cr.ID), "application/json", []byte(`{"seed":1,"seed":2}`))
	if code(err) != "bad_request" || !containsAll(err.Error(), `duplicate key "seed"`) {
		t.Fatalf("reset with a duplicate seed: %v", err)
	}
	if _, err := c.step(cr.ID, actionAt(0, len(cr.Spaces.Nvec))); code(err) != "not_reset" {
		t.Fatalf("the refused reset reset the env: %v", err)
	}
}

// TestCheckKeys: the duplicate-key scan on its own, nested values included.
func TestCheckKeys(t *testing.T) {
	for _, tc := range []struct{ body, err string }{
		{`{}`, ""},
		{`null`, ""},
		{`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, ""},
		{`{"a":"a","b":"a"}`, ""},
		{`{"a":1,"a":1}`, `duplicate key "a"`},
		{`{"x":{"k":1,"K":2}}`, `duplicate key "K" in $.x`},
		{"{\"k\":1,\"\u212a\":2}", "duplicate key \"\u212a\""}, // Kelvin sign folds to k
		{`{"c":[{"a":3,"a":4}]}`, `duplicate key "a" in $.c[]`},
		{`{"a":1,`, "unexpected end of JSON input"},
		{`{"a" 1}`, "invalid character"},
	} {
		err := checkKeys([]byte(tc.body))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tc.body, err)
		case tc.err != "" && (err == nil || !containsAll(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error with %q", tc.body, err, tc.err)
		}
	}
}

// TestRefusedBodyKeepsConnection: a JSON body over the limit, with or
// without a Content-Length, is refused without closing the connection, so
// the connection's envs live on.
func TestRefusedBodyKeepsConnection(t *testing.T) {
	s, ts := newTestServer(t, Config{MaxJSONBytes: 1024})
	c := newClient(ts)
	cr, err := c.create(CreateRequest{Profile: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	big := fmt.Appendf(nil, `{"profile":"etl","trace":"%0*d"}`, 4000, 0)
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(big)
		if chunked {
			body = io.MultiReader(bytes.NewReader(big)) // no length known: sent chunked
		}
		req, err := http.NewRequest("POST", ts.URL+"/v1/envs", body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Close {
			t.Fatalf("chunked %v: status %d, connection close %v; want 413 on a kept connection", chunked, resp.StatusCode, resp.Close)
		}
	}
	if _, err := c.reset(cr.ID, 1); err != nil {
		t.Fatalf("env after refused bodies: %v", err)
	}
	if st := s.Stats(); st.Envs != 1 || st.Conns != 1 {
		t.Fatalf("stats %+v, want 1 env on 1 connection", st)
	}
}

// TestTraceCacheBounded: however many distinct traces clients ask for, the
// server keeps at most MaxCachedTraces, the newest, and reuses a kept one.
func TestTraceCacheBounded(t *testing.T) {
	s, err := New(Config{TracesDir: t.TempDir(), Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.trace("taxi", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.trace("taxi", 1, 0); again != first {
		t.Fatal("a cached trace was loaded again")
	}
	for i := range MaxCachedTraces + 10 {
		if _, err := s.trace("taxi", 1, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.traces) != MaxCachedTraces || len(s.traceOrder) != MaxCachedTraces {
		t.Fatalf("%d traces cached (%d in order), want %d", len(s.traces), len(s.traceOrder), MaxCachedTraces)
	}
	if _, ok := s.traces[traceKey{"taxi", 1, 0}]; ok {
		t.Error("the oldest trace is still cached")
	}
}
