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
	"testing"
)

// newTestServer starts s on a loopback listener with per-connection ids.
func newTestServer(t testing.TB, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Config.ConnContext = s.ConnContext
	ts.Start()
	t.Cleanup(ts.Close)
	return s, ts
}

// client is a minimal Go client of the protocol, one connection per
// client (its own Transport).
type client struct {
	base string
	hc   *http.Client
	buf  bytes.Buffer
}

func newClient(ts *httptest.Server) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DialContext: (&net.Dialer{}).DialContext}
	return &client{base: ts.URL, hc: &http.Client{Transport: tr}}
}

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
