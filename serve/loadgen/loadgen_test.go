package loadgen

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"streamscale/serve/api"
	"streamscale/serve/internal/fixture"
)

func TestHistBuckets(t *testing.T) {
	prev := uint64(0)
	for i := range histSize - 1 {
		u := upper(i)
		if i > 0 && u <= prev {
			t.Fatalf("upper(%d) = %d not above %d", i, u, prev)
		}
		if bucket(u) != i || bucket(prev+1) != i && i > 0 {
			t.Fatalf("bucket %d: [%d, %d] maps to %d, %d", i, prev+1, u, bucket(prev+1), bucket(u))
		}
		if lo := prev + 1; i >= 256 && float64(u-lo+1) > float64(lo)/128 {
			t.Fatalf("bucket %d [%d, %d] wider than 1/128", i, lo, u)
		}
		prev = u
	}
}

// Quantiles are within a bucket of the exact order statistics.
func TestHistQuantile(t *testing.T) {
	var h hist
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []time.Duration
	for range 10000 {
		d := time.Duration(rng.ExpFloat64() * 1e5)
		xs = append(xs, d)
		h.add(d)
	}
	slices.Sort(xs)
	for _, q := range []float64{0.5, 0.9, 0.99, 1} {
		exact := xs[int(q*float64(len(xs)))-1]
		got := h.quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/128+1 {
			t.Fatalf("q %v: %v, exact %v", q, got, exact)
		}
	}
	if h.quantile(1) != xs[len(xs)-1] {
		t.Fatalf("max %v, want %v", h.quantile(1), xs[len(xs)-1])
	}
}

func TestLoopback(t *testing.T) {
	ctx := context.Background()
	for _, a := range []string{"127.0.0.1:8080", "[::1]:80", "localhost:1", "127.1.2.3:9"} {
		if _, err := Loopback(ctx, a); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	for _, a := range []string{"10.0.0.1:80", "0.0.0.0:8080", "[::]:80", "example.com:80", "8.8.8.8:53", "127.0.0.1"} {
		if _, err := Loopback(ctx, a); err == nil || !strings.HasPrefix(err.Error(), "loadgen: ") {
			t.Errorf("%s: %v", a, err)
		}
	}
}

func testServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := fixture.Write(dir, "pred", "pred", 16, 1); err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestRun(t *testing.T) {
	addr := testServer(t)
	res, err := Run(context.Background(), Config{Addr: addr, Policy: "pred", Duration: 300 * time.Millisecond, Warmup: -1, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests < 10 || res.Errors != 0 || res.RPS <= 0 || res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.Max {
		t.Fatalf("%+v", res)
	}
	// A request limit stops the run early.
	res, err = Run(context.Background(), Config{Addr: addr, Policy: "pred", Duration: time.Minute, Warmup: -1, Concurrency: 2, MaxRequests: 50})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 50 || res.Elapsed > 30*time.Second {
		t.Fatalf("limited run: %+v", res)
	}
}

func TestRunErrors(t *testing.T) {
	addr := testServer(t)
	ctx := context.Background()
	res, err := Run(ctx, Config{Addr: addr, Policy: "pred", Duration: 200 * time.Millisecond, Warmup: -1, Concurrency: 1, Body: []byte(`{"observation":{}}`)})
	if err == nil || res.Errors == 0 || res.ErrorsByKind["status 400"] != res.Errors {
		t.Fatalf("bad body: %v %+v", err, res)
	}
	if _, err := Run(ctx, Config{Addr: addr, Policy: "nope", Duration: time.Second}); err == nil || !strings.Contains(err.Error(), `no policy "nope"`) {
		t.Fatalf("unknown policy: %v", err)
	}
	for _, cfg := range []Config{
		{Addr: addr},
		{Addr: addr, Policy: "pred", Duration: time.Hour},
		{Addr: addr, Policy: "pred", Concurrency: 1000},
		{Addr: "192.0.2.1:80", Policy: "pred"},
	} {
		if _, err := Run(ctx, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestRunResidual: against a residual policy the load's body carries the
// base rule's targets (the server refuses an act without them), and every
// request succeeds.
func TestRunResidual(t *testing.T) {
	dir := t.TempDir()
	if _, err := fixture.WriteResidual(dir, "pred", "pred", "threshold:measured:target=0.7:tol=0.1:window=10", 16, 1, 2); err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	body, err := RealBody(context.Background(), addr, "pred")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"rule_targets":[`) {
		t.Fatalf("body without the rule's targets: %s", body)
	}
	res, err := Run(context.Background(), Config{Addr: addr, Policy: "pred", Duration: 200 * time.Millisecond, Warmup: -1, Concurrency: 1})
	if err != nil || res.Errors != 0 || res.Requests == 0 {
		t.Fatalf("%v %+v", err, res)
	}
}
