package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/serve/internal/fixture"
)

// Limits of Config.
const (
	MaxDuration    = 10 * time.Minute
	MaxWarmup      = time.Minute
	MaxConcurrency = 256
)

// Config is one load test.
type Config struct {
	Addr        string        // host:port of the server; loopback only
	Policy      string        // policy name
	Duration    time.Duration // measured time (default 10s, ≤ MaxDuration)
	Warmup      time.Duration // unmeasured time before it (default 1s; negative: none)
	Concurrency int           // connections, one worker each (default 32, ≤ MaxConcurrency)
	MaxRequests int64         // stop after this many measured requests (0: no limit)
	Timeout     time.Duration // per request (default 5s)
	Body        []byte        // act request body (default: RealBody)
}

// Result is what a load test measured.
type Result struct {
	Requests      int64            // measured requests answered 200
	Errors        int64            // measured requests that failed
	ErrorsByKind  map[string]int64 // e.g. "status 422", "io", "timeout", "connect"
	Elapsed       time.Duration    // measured wall time
	RPS           float64          // Requests / Elapsed
	P50, P90, P99 time.Duration    // latency quantiles of successful requests
	P999, Max     time.Duration
}

func (r *Result) String() string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
	s := fmt.Sprintf("requests %d in %.2fs: %.0f req/s\nlatency ms: p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\nerrors %d",
		r.Requests, r.Elapsed.Seconds(), r.RPS, ms(r.P50), ms(r.P90), ms(r.P99), ms(r.P999), ms(r.Max), r.Errors)
	kinds := make([]string, 0, len(r.ErrorsByKind))
	for k := range r.ErrorsByKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		s += fmt.Sprintf("  %s: %d", k, r.ErrorsByKind[k])
	}
	return s
}

func (c *Config) validate() error {
	if c.Policy == "" {
		return errors.New("loadgen: no policy")
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Duration < 0 || c.Duration > MaxDuration {
		return fmt.Errorf("loadgen: duration %v outside (0, %v]", c.Duration, MaxDuration)
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = time.Second
	case c.Warmup < 0:
		c.Warmup = 0
	case c.Warmup > MaxWarmup:
		return fmt.Errorf("loadgen: warm-up %v over %v", c.Warmup, MaxWarmup)
	}
	if c.Concurrency == 0 {
		c.Concurrency = 32
	}
	if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
		return fmt.Errorf("loadgen: concurrency %d outside [1, %d]", c.Concurrency, MaxConcurrency)
	}
	if c.MaxRequests < 0 {
		return fmt.Errorf("loadgen: negative request limit %d", c.MaxRequests)
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	return nil
}

// Loopback resolves addr and returns it as ip:port if every address of the
// host is a loopback address; anything else is refused.
func Loopback(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("loadgen: address %q: %w", addr, err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if host == "localhost" {
		if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
			return "", fmt.Errorf("loadgen: %w", err)
		}
	}
	if len(ips) == 0 {
		return "", fmt.Errorf("loadgen: refusing %q: only loopback addresses (127.0.0.0/8, ::1, localhost) may be loaded", addr)
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return "", fmt.Errorf("loadgen: refusing %q: %v is not a loopback address", addr, ip)
		}
	}
	return net.JoinHostPort(ips[0].Unmap().String(), port), nil
}

// RealBody asks the server for the policy's profile and layout and
// returns a deterministic act request for a real observation of that
// profile (its default scenario after a few steps).
func RealBody(ctx context.Context, addr, policy string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/v1/policies", nil)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("loadgen: GET /v1/policies: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var list struct {
		Policies []struct {
			Name        string `json:"name"`
			Profile     string `json:"profile"`
			Observation struct {
				Boxes map[string]struct {
					Low []float64 `json:"low"`
				} `json:"boxes"`
			} `json:"observation"`
			Residual *struct {
				Base string `json:"base"`
			} `json:"residual"`
		} `json:"policies"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("loadgen: GET /v1/policies: %w", err)
	}
	for _, p := range list.Policies {
		if p.Name != policy {
			continue
		}
		o, err := fixture.Observation(p.Profile)
		if err != nil {
			return nil, fmt.Errorf("loadgen: policy %s: %w", policy, err)
		}
		vecs := map[string][]float64{"app": o.App, "server": o.Server, "task": o.Task}
		for k, b := range p.Observation.Boxes {
			if len(vecs[k]) != len(b.Low) {
				return nil, fmt.Errorf("loadgen: policy %s wants %d %s values, profile %s's scenario has %d", policy, len(b.Low), k, p.Profile, len(vecs[k]))
			}
		}
		obs := map[string][]float64{}
		for k := range p.Observation.Boxes {
			obs[k] = vecs[k]
		}
		body := map[string]any{"observation": obs, "deterministic": true}
		if p.Residual != nil {
			// A residual policy corrects its base rule's targets, which the
			// client computes: the rule's first decision on this observation.
			targets, err := ruleTargets(p.Residual.Base, p.Profile, o)
			if err != nil {
				return nil, fmt.Errorf("loadgen: policy %s: %w", policy, err)
			}
			body["rule_targets"] = targets
		}
		return json.Marshal(body)
	}
	return nil, fmt.Errorf("loadgen: server has no policy %q", policy)
}

// ruleTargets is the base rule's (rulespec) targets for obs, on the
// profile's default scenario, from a fresh rule.
func ruleTargets(base, profile string, obs env.Observation) ([]float64, error) {
	rule, err := rulespec.Parse(base)
	if err != nil {
		return nil, err
	}
	e, err := fixture.Env(profile)
	if err != nil {
		return nil, err
	}
	c, err := rule.New(e.Config())
	if err != nil {
		return nil, err
	}
	if err := c.Reset(0); err != nil {
		return nil, err
	}
	a, err := c.Act(obs)
	if err != nil {
		return nil, err
	}
	return a.Targets, nil
}

// Run loads the server at cfg.Addr and reports what it measured. It stops
// early, with what it has, when ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	addr, err := Loopback(ctx, cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.Body == nil {
		if cfg.Body, err = RealBody(ctx, addr, cfg.Policy); err != nil {
			return nil, err
		}
	}
	reqBytes := fmt.Appendf(nil, "POST /v1/policies/%s/act HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		cfg.Policy, addr, len(cfg.Body), cfg.Body)

	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	end := measureFrom.Add(cfg.Duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var measured atomic.Int64
	workers := make([]*worker, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{addr: addr, req: reqBytes, timeout: cfg.Timeout, errs: map[string]int64{}}
		workers[i] = w
		wg.Go(func() { w.run(ctx, measureFrom, end, cfg.MaxRequests, &measured, cancel) })
	}
	wg.Wait()
	stop := time.Now()
	if stop.After(end) {
		stop = end
	}

	res := &Result{ErrorsByKind: map[string]int64{}}
	var h hist
	for _, w := range workers {
		h.merge(&w.hist)
		res.Errors += w.nerr
		for k, n := range w.errs {
			res.ErrorsByKind[k] += n
		}
	}
	res.Requests = int64(h.n)
	res.Elapsed = max(stop.Sub(measureFrom), 0)
	if res.Elapsed > 0 {
		res.RPS = float64(res.Requests) / res.Elapsed.Seconds()
	}
	res.P50, res.P90, res.P99, res.P999 = h.quantile(0.5), h.quantile(0.9), h.quantile(0.99), h.quantile(0.999)
	res.Max = time.Duration(h.max)
	if res.Requests == 0 && res.Errors > 0 {
		return res, fmt.Errorf("loadgen: every request failed (%d errors)", res.Errors)
	}
	return res, nil
}

// worker is one connection sending requests back to back.
type worker struct {
	addr    string
	req     []byte
	timeout time.Duration
	conn    net.Conn
	br      *bufio.Reader
	hist    hist
	nerr    int64
	errs    map[string]int64
}

func (w *worker) run(ctx context.Context, measureFrom, end time.Time, limit int64, measured *atomic.Int64, stop func()) {
	defer func() {
		if w.conn != nil {
			w.conn.Close()
		}
	}()
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		kind := w.do()
		d := time.Since(t0)
		if t0.Before(measureFrom) {
			continue
		}
		if limit > 0 && measured.Add(1) > limit {
			stop()
			return
		}
		if kind == "" {
			w.hist.add(d)
			continue
		}
		if ctx.Err() != nil && (kind == "io" || kind == "timeout") {
			return // interrupted by the end of the run, not a server error
		}
		w.nerr++
		w.errs[kind]++
	}
}

// do sends one request and reads the response; it returns "" on 200 or
// the kind of failure. Any failure drops the connection.
func (w *worker) do() (kind string) {
	if w.conn == nil {
		c, err := net.DialTimeout("tcp", w.addr, w.timeout)
		if err != nil {
			return "connect"
		}
		w.conn = c
		if w.br == nil {
			w.br = bufio.NewReaderSize(c, 16<<10)
		} else {
			w.br.Reset(c)
		}
	}
	keep := false
	defer func() {
		if !keep {
			w.conn.Close()
			w.conn = nil
		}
	}()
	if err := w.conn.SetDeadline(time.Now().Add(w.timeout)); err != nil {
		return "io"
	}
	if _, err := w.conn.Write(w.req); err != nil {
		return ioKind(err)
	}
	status, length, closeConn, err := readHead(w.br)
	if err != nil {
		return ioKind(err)
	}
	if length < 0 {
		return "protocol"
	}
	if _, err := w.br.Discard(length); err != nil {
		return ioKind(err)
	}
	keep = !closeConn
	if status != http.StatusOK {
		return "status " + strconv.Itoa(status)
	}
	return ""
}

func ioKind(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "io"
}

// readHead reads a status line and headers, returning the status, the
// Content-Length (−1 if absent) and whether the server closes the connection.
func readHead(br *bufio.Reader) (status, length int, closeConn bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, 0, false, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, -1, true, nil
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, -1, true, nil
		}
		status = status*10 + int(c-'0')
	}
	length = -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return status, length, closeConn, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n := 0
			for _, c := range value {
				if c < '0' || c > '9' || n > 1<<40 {
					return status, -1, true, nil
				}
				n = n*10 + int(c-'0')
			}
			if len(value) == 0 {
				return status, -1, true, nil
			}
			length = n
		case bytes.EqualFold(name, []byte("Connection")):
			closeConn = bytes.EqualFold(value, []byte("close"))
		}
	}
}
