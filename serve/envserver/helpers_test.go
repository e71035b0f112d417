package envserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// newTestServer starts s on a loopback listener, installed as
// Server.Configure installs it.
func newTestServer(t testing.TB, cfg Config) (*Server, *httptest.Server) {
	s, ts, _ := newTestServerConns(t, cfg)
	return s, ts
}

// newTestServerConns is newTestServer that also reports, on the returned
// channel, every connection the server has finished closing (after its
// instances were freed).
func newTestServerConns(t testing.TB, cfg Config) (*Server, *httptest.Server, <-chan struct{}) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	s.Configure(ts.Config)
	closed := make(chan struct{}, 64)
	ts.Config.ConnState = func(nc net.Conn, st http.ConnState) {
		s.ConnState(nc, st)
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return s, ts, closed
}

// client is a minimal Go client of the protocol, one connection per
// client (its own Transport).
type client struct {
	base string
	hc   *http.Client
	buf  bytes.Buffer
}

func newClient(ts *httptest.Server) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DialContext: (&net.Dialer{}).DialContext}
	return &client{base: ts.URL, hc: &http.Client{Transport: tr}}
}

// hangUp closes the client's connection (as a crashed process would:
// no DELETE).
func (c *client) hangUp() { c.hc.Transport.(*http.Transport).CloseIdleConnections() }

// apiError is an error response.
type apiError struct {
	Status int
	Code   string `json:"code"`
	Msg    string `json:"error"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Msg) }

func (c *client) do(method, path, ctype string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := io.Copy(&c.buf, resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		e := &apiError{Status: resp.StatusCode}
		if err := json.Unmarshal(c.buf.Bytes(), e); err != nil {
			return nil, fmt.Errorf("status %d, body %q", resp.StatusCode, c.buf.String())
		}
		return nil, e
	}
	return c.buf.Bytes(), nil
}

func (c *client) create(req CreateRequest) (CreateResponse, error) {
	js, _ := json.Marshal(req)
	b, err := c.do("POST", "/v1/envs", "application/json", js)
	var resp CreateResponse
	if err == nil {
		err = json.Unmarshal(b, &resp)
	}
	return resp, err
}

func (c *client) reset(id, seed uint64) ([]Section, error) {
	b, err := c.do("POST", fmt.Sprintf("/v1/envs/%d/reset", id), "application/json", fmt.Appendf(nil, `{"seed":%d}`, seed))
	if err != nil {
		return nil, err
	}
	return Decode(b, 16)
}

func (c *client) step(id uint64, choices []int64) ([]Section, error) {
	return c.stepRaw(id, AppendInt64s(nil, choices))
}

func (c *client) stepRaw(id uint64, body []byte) ([]Section, error) {
	b, err := c.do("POST", fmt.Sprintf("/v1/envs/%d/step", id), "application/octet-stream", body)
	if err != nil {
		return nil, err
	}
	return Decode(b, 16)
}

func (c *client) close(id uint64) error {
	_, err := c.do("DELETE", fmt.Sprintf("/v1/envs/%d", id), "", nil)
	return err
}

func code(err error) string {
	if e, ok := err.(*apiError); ok {
		return e.Code
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// newPlainServer serves s.Handler() without Server.Configure's hooks.
func newPlainServer(t testing.TB, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
