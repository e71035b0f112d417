package api

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// startHTTP serves s over loopback through a real net/http server with
// the InstrumentServer hooks, as the serve command does.
func startHTTP(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Config.MaxHeaderBytes = 4 << 10
	ts.Listener = s.InstrumentServer(ts.Config, ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// HEAD answers on every GET route with GET's status and headers and no
// body.
func TestHeadOnGetRoutes(t *testing.T) {
	s := newTestServer(t, "", "")
	ts := startHTTP(t, s)
	for _, r := range s.engine.Routes() {
		if r.Method != http.MethodGet {
			continue
		}
		get, err := http.Get(ts.URL + r.Path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, get.Body) //nolint:errcheck
		get.Body.Close()
		head, err := http.Head(ts.URL + r.Path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(head.Body)
		head.Body.Close()
		if head.StatusCode != get.StatusCode || len(b) != 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q, %d bytes; GET %d %q", r.Path, head.StatusCode, head.Header.Get("Content-Type"), len(b), get.StatusCode, get.Header.Get("Content-Type"))
		}
	}
}

// Requests that net/http answers itself, before any handler runs (a
// malformed request line, headers over MaxHeaderBytes, an unsupported
// version, headers cut short by the client's half-close), are counted by
// status code, on a fresh connection as on one that served a request
// already; well-formed requests are not.
func TestRejectedBeforeRouting(t *testing.T) {
	s := newTestServer(t, "", "")
	ts := startHTTP(t, s)
	addr := ts.Listener.Addr().String()
	raw := func(first bool, req string, wantStatus string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
		br := bufio.NewReader(c)
		if !first {
			// A good request first: the connection has been routed once.
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body) //nolint:errcheck
			resp.Body.Close()
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(req, "\r\n\r\n") { // cut short: the server sees EOF mid-request
			c.(*net.TCPConn).CloseWrite() //nolint:errcheck
		}
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, " "+wantStatus+" ") {
			t.Fatalf("%.40q: response %q, %v; want %s", req, line, err, wantStatus)
		}
		io.Copy(io.Discard, br) //nolint:errcheck // until the server closes
	}
	for _, first := range []bool{true, false} {
		raw(first, "THIS IS NOT HTTP\r\n\r\n", "400")
		raw(first, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 32<<10)+"\r\n\r\n", "431")
		raw(first, "GET /healthz HTTP/3.0\r\nHost: x\r\n\r\n", "505")
		raw(first, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Half", "400")
	}

	want := []string{
		`streamscale_serve_http_rejected_total{code="400"} 4`,
		`streamscale_serve_http_rejected_total{code="431"} 2`,
		`streamscale_serve_http_rejected_total{code="505"} 2`,
		`streamscale_serve_connections 0`,
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		m := do(s, "GET", "/metrics", nil).Body.String()
		if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(m, w+"\n") }) {
			if strings.Count(m, "streamscale_serve_http_rejected_total{") != 3 {
				t.Fatalf("other rejections counted:\n%s", grepPrefix(m, "streamscale_serve_http_rejected_total"))
			}
			if !strings.Contains(m, `streamscale_serve_requests_total{code="200",route="/healthz"} 4`) {
				t.Fatalf("the routed requests are not counted as such:\n%s", m)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack some of\n%s\nhave\n%s\n%s", strings.Join(want, "\n"),
				grepPrefix(m, "streamscale_serve_http_rejected_total"), grepPrefix(m, "streamscale_serve_connections"))
		}
	}
}

func grepPrefix(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
