package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"streamscale/serve/internal/fixture"
)

// syncBuffer is a bytes.Buffer safe for a writer and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(t *testing.T, ctx context.Context, args []string, getenv func(string) string) (int, string, string) {
	t.Helper()
	var out, errb syncBuffer
	code := Main(ctx, args, IO{Stdout: &out, Stderr: &errb, Getenv: getenv})
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"api", "-nope"}, 2, "flag provided but not defined"},
		{[]string{"api", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"api", "-admin-token", "short"}, 2, "admin token has 5 bytes"},
		{[]string{"api", "-policies", dir, "-addr", "127.0.0.1:0"}, 1, "no policies in"},
		{[]string{"loadgen"}, 2, "-policy is required"},
		{[]string{"loadgen", "-policy", "pred", "-addr", "192.0.2.7:80"}, 1, "not a loopback address"},
		{[]string{"loadgen", "-policy", "pred", "-addr", "example.com:80"}, 1, "only loopback"},
	} {
		code, _, stderr := run(t, ctx, c.args, nil)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
}

// serve api listens, loads, answers, and shuts down gracefully when its
// context ends; the admin token can come from the environment.
func TestServeLifecycle(t *testing.T) {
	dir := t.TempDir()
	if _, err := fixture.Write(dir, "pred", "pred", 16, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	getenv := func(k string) string {
		if k == TokenEnv {
			return "token-from-the-environment"
		}
		return ""
	}
	go func() {
		done <- Main(ctx, []string{"api", "-policies", dir, "-addr", "127.0.0.1:0"}, IO{Stdout: &out, Stderr: &errb, Getenv: getenv})
	}()
	addrRE := regexp.MustCompile(`listening on (http://\S+)`)
	var base string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(errb.String()); m != nil && strings.Contains(errb.String(), "ready:") {
			base = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready line: %s", errb.String())
		}
	}
	get := func(method, path, token string) int {
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("GET", "/readyz", ""); c != 200 {
		t.Fatalf("readyz %d", c)
	}
	if c := get("POST", "/admin/reload", "token-from-the-environment"); c != 200 {
		t.Fatalf("reload with the environment's token: %d", c)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful shutdown")
	}
	if !strings.Contains(errb.String(), "shutting down") {
		t.Fatalf("stderr %s", errb.String())
	}
}
