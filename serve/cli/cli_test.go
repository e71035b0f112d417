package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamscale/internal/command"
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
	code := Main(ctx, args, command.IO{Stdout: &out, Stderr: &errb, Getenv: getenv})
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	shortToken := func(k string) string {
		if k == TokenEnv {
			return "short"
		}
		return ""
	}
	for _, c := range []struct {
		args   []string
		getenv func(string) string
		code   int
		msg    string
	}{
		{nil, nil, 2, "usage"},
		{[]string{"bogus"}, nil, 2, `unknown command "bogus"`},
		{[]string{"api", "-nope"}, nil, 2, "serve api: flag provided but not defined: -nope"},
		{[]string{"api", "extra"}, nil, 2, `unexpected argument "extra"`},
		{[]string{"api", "-admin-token", "short"}, nil, 2, "-admin-token has 5 bytes, want at least 16"},
		{[]string{"api"}, shortToken, 2, "$" + TokenEnv + " (no -admin-token) has 5 bytes"},
		{[]string{"api", "-max-conns", "0"}, nil, 2, "-max-conns 0, want ≥ 1"},
		{[]string{"api", "-drain-delay", "-1s"}, nil, 2, "-drain-delay -1s, want ≥ 0"},
		{[]string{"api", "-shutdown-timeout", "0s"}, nil, 2, "-shutdown-timeout 0s, want > 0"},
		{[]string{"api", "-max-body", "10"}, nil, 2, "-max-body 10"},
		{[]string{"api", "-max-conns", "many"}, nil, 2, "-max-conns"},
		{[]string{"api", "-policies", dir, "-addr", "127.0.0.1:0", "-drain-delay", "0s"}, nil, 1, "no policies in"},
		{[]string{"loadgen"}, nil, 2, "-policy is required"},
		{[]string{"loadgen", "-policy", "pred", "-addr", "192.0.2.7:80"}, nil, 1, "not a loopback address"},
		{[]string{"loadgen", "-policy", "pred", "-addr", "example.com:80"}, nil, 1, "only loopback"},
	} {
		code, _, stderr := run(t, ctx, c.args, c.getenv)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
		if c.code == 2 && len(c.args) > 0 && strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") > 0 {
			t.Errorf("%v: usage error on more than one line: %q", c.args, stderr)
		}
	}
}

// -h on the command and on every subcommand prints the usage, every flag
// of the subcommand, and exits 0.
func TestHelp(t *testing.T) {
	for _, c := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"-h"}, []string{"serve api", "serve loadgen"}},
		{[]string{"api", "-h"}, []string{"-policies", "-addr", "-admin-token", "-max-body", "-max-batch", "-max-conns", "-drain-delay", "-shutdown-timeout", "-cpuprofile"}},
		{[]string{"loadgen", "-h"}, []string{"-addr", "-policy", "-duration", "-warmup", "-concurrency", "-requests", "-timeout"}},
	} {
		code, stdout, stderr := run(t, context.Background(), c.args, nil)
		if code != 0 || stderr != "" {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, stderr)
		}
		for _, f := range c.flags {
			if !strings.Contains(stdout, f) {
				t.Errorf("%v: usage lacks %s:\n%s", c.args, f, stdout)
			}
		}
	}
}

// startAPI runs "serve api" over a fresh policy directory on a free port
// with args added, waits for it to be ready, and returns its base URL,
// its stderr, and a channel with its exit code.
func startAPI(t *testing.T, ctx context.Context, getenv func(string) string, args ...string) (string, *syncBuffer, <-chan int) {
	t.Helper()
	dir := t.TempDir()
	if _, err := fixture.Write(dir, "pred", "pred", 16, 1); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	done := make(chan int, 1)
	args = append([]string{"api", "-policies", dir, "-addr", "127.0.0.1:0"}, args...)
	go func() {
		done <- Main(ctx, args, command.IO{Stdout: &out, Stderr: &errb, Getenv: getenv})
	}()
	addrRE := regexp.MustCompile(`listening on (http://\S+)`)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(errb.String()); m != nil && strings.Contains(errb.String(), "ready:") {
			return m[1], &errb, done
		}
		select {
		case code := <-done:
			t.Fatalf("exit %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready line: %s", errb.String())
		}
	}
}

func status(t *testing.T, method, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
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

// serve api listens, loads, answers, and shuts down gracefully when its
// context ends; the admin token can come from the environment.
func TestServeLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	getenv := func(k string) string {
		if k == TokenEnv {
			return "token-from-the-environment"
		}
		return ""
	}
	base, errb, done := startAPI(t, ctx, getenv, "-drain-delay", "50ms")
	if c := status(t, "GET", base+"/readyz", ""); c != 200 {
		t.Fatalf("readyz %d", c)
	}
	if c := status(t, "POST", base+"/admin/reload", "token-from-the-environment"); c != 200 {
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
	for _, line := range []string{"draining", "shutting down", "stopped"} {
		if !strings.Contains(errb.String(), line) {
			t.Fatalf("stderr lacks %q: %s", line, errb.String())
		}
	}
}

// Under load, a cancelled context (SIGTERM) turns /readyz to 503 at once
// while act requests keep being answered for the drain delay; then the
// server stops accepting and finishes what is in flight. No request sent
// before the shutdown began fails; requests sent after the drain may fail
// to connect, and are only counted.
func TestShutdownUnderLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const drain = time.Second
	base, errb, done := startAPI(t, ctx, nil, "-drain-delay", drain.String())
	o, err := fixture.Observation("pred")
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"observation": map[string][]float64{"app": o.App, "server": o.Server, "task": o.Task}})
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		start time.Time
		err   error
	}
	const clients = 16
	var (
		mu      sync.Mutex
		results []result
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for !stop.Load() {
				// A request's time is when it was written to its
				// connection: a goroutine of this busy process may stall
				// for hundreds of ms between deciding to send and sending.
				start := time.Now()
				var wrote atomic.Pointer[time.Time]
				ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
					WroteRequest: func(httptrace.WroteRequestInfo) { now := time.Now(); wrote.Store(&now) },
				})
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/policies/pred/act", bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if w := wrote.Load(); w != nil {
					start = *w
				}
				mu.Lock()
				results = append(results, result{start, err})
				mu.Unlock()
			}
		})
	}
	// Cancel once every client has had an answer (a fixed sleep may pass
	// with no request sent on a host that gives this process no CPU).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(results)
		mu.Unlock()
		if n >= clients {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests answered in 20 s", n)
		}
	}
	cancelled := time.Now()
	cancel()
	// /readyz is 503 during the drain (polled on fresh connections).
	// At least three polls if the loaded host allows them before 3/4 of
	// the drain (a poll after the listener closed could not connect).
	var ready []int
	for (time.Since(cancelled) < drain/2 || len(ready) < 3) && time.Since(cancelled) < drain*3/4 {
		ready = append(ready, status(t, "GET", base+"/readyz", ""))
		time.Sleep(20 * time.Millisecond)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("no shutdown")
	}
	stop.Store(true)
	wg.Wait()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for i, c := range ready {
		// The first poll may race the cancellation by a few microseconds.
		if c != http.StatusServiceUnavailable && i > 0 {
			t.Fatalf("readyz during the drain: %v", ready)
		}
	}
	if len(ready) < 2 { // the first may race the cancellation
		t.Fatalf("readyz polled %d times during the drain", len(ready))
	}
	// Shutdown begins at cancelled+drain. serve api answers the requests
	// sent before it, even those on connections it had not accepted yet
	// (TestDrainServesAcceptQueue), except one sent then on a keep-alive
	// connection idle through the drain, which Shutdown closes: allow
	// 250 ms.
	shutdownBegan := cancelled.Add(drain - 250*time.Millisecond)
	var before, during, after, failedAfter int
	for _, r := range results {
		switch {
		case r.start.Before(cancelled):
			before++
		case r.start.Before(shutdownBegan):
			during++
		default:
			after++
			if r.err != nil {
				failedAfter++
			}
			continue
		}
		if r.err != nil {
			t.Errorf("request sent %v after the cancellation failed: %v", r.start.Sub(cancelled), r.err)
		}
	}
	if before == 0 || during == 0 {
		t.Fatalf("%d requests before the cancellation, %d during the drain; want some of each", before, during)
	}
	t.Logf("%d requests before the cancellation, %d during the drain, all answered; %d after, %d of them failed", before, during, after, failedAfter)
}

// request sends a GET on c and reads the response (a 10 s deadline guards
// against a hang; no outcome depends on it).
func request(t *testing.T, c net.Conn, path string) *http.Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	return resp
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// -max-conns caps the connections that serve every route; an idle
// keep-alive connection gives its slot up to a newcomer, and beyond the
// cap -health-conns connections answer the health routes at once. With a
// cap of 1: a silent connection holds the slot (accepted first: the
// kernel's queue is FIFO); health probes on further connections are
// answered, each with Connection: close; a policy request waits for the
// slot and is served once the silent connection closes; and a later
// client takes the slot from that connection once it idles, which the
// server closes.
func TestMaxConnsReclaimsIdleAndReservesHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, _, done := startAPI(t, ctx, nil, "-max-conns", "1", "-drain-delay", "0s")
	addr := strings.TrimPrefix(base, "http://")
	silent := dial(t, addr)
	for _, path := range []string{"/healthz", "/readyz", "/v2/health/live", "/v2/health/ready"} {
		resp := request(t, dial(t, addr), path)
		if resp.StatusCode != 200 || !resp.Close {
			t.Fatalf("health probe %s beyond the cap: %d, Connection: close %v; want 200 and close", path, resp.StatusCode, resp.Close)
		}
	}
	first := dial(t, addr)
	first.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	if _, err := io.WriteString(first, "GET /v1/policies HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	silent.Close() // frees the slot: the waiting request takes it
	br := bufio.NewReader(first)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("policy request waiting for the slot: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	// first is now an idle keep-alive connection holding the slot.
	if resp := request(t, dial(t, addr), "/v1/policies"); resp.StatusCode != 200 {
		t.Fatalf("a new client while the slot is held idle: %d", resp.StatusCode)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection whose slot was taken: read %v, want EOF (closed by the server)", err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// A connection the kernel completed but the server had not accepted when
// the drain ended (here: held back by -max-conns 1 -health-conns 0; on a
// loaded host: a process that got no CPU to accept it) is served at
// shutdown, not reset by the listener's close.
func TestDrainServesAcceptQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, errb, done := startAPI(t, ctx, nil, "-max-conns", "1", "-health-conns", "0", "-drain-delay", "100ms")
	addr := strings.TrimPrefix(base, "http://")
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// a holds the only slot with a request it has not finished (not idle,
	// so not reclaimed); b waits in the queue.
	if _, err := io.WriteString(a, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	b, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := io.WriteString(b, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	cancel()
	b.SetReadDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck
	resp, err = http.ReadResponse(bufio.NewReader(b), nil)
	if err != nil {
		code := <-done
		t.Fatalf("queued connection at shutdown: %v; want a response\nexit %d: %s", err, code, errb.String())
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Errorf("queued connection: status %d, Connection: close %v; want 200 and close", resp.StatusCode, resp.Close)
	}
	io.WriteString(a, "\r\n") //nolint:errcheck // a's request ends; shutdown need not wait for its header timeout
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "(1 connections taken from the accept queue)") {
		t.Errorf("log: %s", errb.String())
	}
}

// TestEnvCommand: serve env refuses bad flags with one line naming the
// flag, lists every flag on -h, and serves: it prints its address, answers
// /v1/healthz and creates an environment, then stops cleanly when its
// context is cancelled.
func TestEnvCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"env", "-max-envs", "0"}, "-max-envs 0, want 1..1024"},
		{[]string{"env", "-max-envs", "1025"}, "-max-envs 1025, want 1..1024"},
		{[]string{"env", "-max-envs", "4", "-max-envs-per-conn", "5"}, "-max-envs-per-conn 5, want 0..4"},
		{[]string{"env", "-idle-timeout", "0s"}, "-idle-timeout 0s, want > 0"},
		{[]string{"env", "-max-body", "10"}, "-max-body 10, want ≥ 1024"},
		{[]string{"env", "-scenario", "/dev/zero"}, "not a regular file"},
		{[]string{"env", "-max-conns", "0"}, "-max-conns 0, want ≥ 1"},
		{[]string{"env", "-exit-with-stdin"}, "-exit-with-stdin, but this run has no standard input"},
		{[]string{"env", "-bogus"}, "flag provided but not defined: -bogus"},
	} {
		code, _, stderr := run(t, context.Background(), c.args, nil)
		if code != 2 || !strings.Contains(stderr, c.msg) || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.msg)
		}
	}
	code, stdout, _ := run(t, context.Background(), []string{"env", "-h"}, nil)
	for _, f := range []string{"-addr", "-max-envs", "-max-envs-per-conn", "-idle-timeout", "-max-body", "-traces", "-workers", "-max-conns"} {
		if code != 0 || !strings.Contains(stdout, f) {
			t.Errorf("env -h: exit %d, flag %s missing from %q", code, f, stdout)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"env", "-addr", "127.0.0.1:0", "-traces", t.TempDir()}, command.IO{Stdout: &out, Stderr: &errb})
	}()
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := strings.TrimSpace(out.String()); strings.HasPrefix(s, "http://") {
			base = strings.Fields(s)[0]
		}
	}
	if base == "" {
		t.Fatalf("no address printed; stderr %q", errb.String())
	}
	if c := status(t, "GET", base+"/v1/healthz", ""); c != 200 {
		t.Fatalf("healthz %d", c)
	}
	// An env created over a connection is freed when it closes.
	tr := &http.Transport{}
	resp, err := (&http.Client{Transport: tr}).Post(base+"/v1/envs", "application/json", strings.NewReader(`{"profile": "pred", "trace": "taxi", "scenario": "paper", "placement_seed": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	// Read the body to its end: a body closed unread makes the transport
	// drop the connection, and with it the env (the test used to fail so
	// under load).
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status is checked below
	resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if envs := envsAlive(t, base); envs != 1 {
		t.Fatalf("%d envs alive after a create, want 1", envs)
	}
	tr.CloseIdleConnections()
	envs := -1
	for deadline := time.Now().Add(20 * time.Second); envs != 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		envs = envsAlive(t, base)
	}
	if envs != 0 {
		t.Fatalf("%d envs alive after their connection closed, want 0", envs)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve env did not stop")
	}
}

// envsAlive reads the envs alive from serve env's healthz.
func envsAlive(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/v1/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Envs int `json:"envs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Envs
}

// TestEnvExitWithStdin: with -exit-with-stdin, serve env shuts down
// cleanly (exit 0) when its standard input ends — the parent that held
// the pipe is gone — and not before.
func TestEnvExitWithStdin(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"env", "-addr", "127.0.0.1:0", "-traces", t.TempDir(), "-exit-with-stdin"},
			command.IO{Stdout: &out, Stderr: &errb, Stdin: pr})
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.HasPrefix(out.String(), "http://"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no address printed; stderr %q", errb.String())
		}
	}
	if _, err := pw.Write([]byte("ignored\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		t.Fatalf("exited (%d) while its standard input was open; stderr %q", code, errb.String())
	case <-time.After(100 * time.Millisecond):
	}
	pw.Close()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errb.String(), "standard input ended") {
			t.Errorf("exit %d, stderr %q; want 0 and the reason", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve env still running 20 s after its standard input ended")
	}
}
