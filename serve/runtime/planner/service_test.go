package planner

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/wire"
	"streamscale/serve/runtime/worker"
)

// startService serves a wc planner service with in-process workers on
// loopback and returns its client and the provider.
func startService(t *testing.T) (*ControlClient, string, *inproc) {
	t.Helper()
	app := runtime.WordCount()
	prov := &inproc{t: t, app: app, cfg: worker.Config{Report: 100 * time.Millisecond, Token: "tok"}}
	s, err := NewService(ServiceConfig{Base: Config{App: app, Token: "tok", Workers: 1, Provider: prov, MaxWorkers: 2},
		ControlAddr: "127.0.0.1:0",
		Spawn: func(addr string, _ time.Duration, _ []int) {
			prov.mu.Lock()
			prov.planner = addr
			prov.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, func(a string) { addrc <- a }) }()
	addr := <-addrc
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		prov.Close()
	})
	c, err := NewControlClient(addr, "tok")
	if err != nil {
		t.Fatal(err)
	}
	return c, addr, prov
}

func validStart() StartRequest {
	return StartRequest{App: "wc", Mode: ModeVertical, Rates: []float64{200, 200, 200, 200, 200, 200}, RateMult: 1, Seed: 1,
		Intervals: 6, TimeScaleMS: 100}
}

// TestServiceRefusesBadRequests: requests without the token, malformed
// or inconsistent bodies, the wrong app, and actions that the state does
// not allow get a clear error and leave the service idle.
func TestServiceRefusesBadRequests(t *testing.T) {
	c, addr, _ := startService(t)
	ctx := context.Background()
	in, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.App != "wc" || in.State != "idle" || len(in.Operators) != 2 {
		t.Fatalf("info %+v", in)
	}
	bad, _ := NewControlClient(addr, "wrong")
	if _, err := bad.Info(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*StartRequest)
		want string
	}{
		{"other app", func(r *StartRequest) { r.App = "pred" }, `app "pred", this planner runs "wc"`},
		{"mode", func(r *StartRequest) { r.Mode = "sideways" }, "mode"},
		{"horizontal without controller", func(r *StartRequest) { r.Mode = ModeHorizontal }, "no placement controller"},
		{"both loads", func(r *StartRequest) { r.Trace = "taxi" }, "exactly one of trace and rates"},
		{"no load", func(r *StartRequest) { r.Rates = nil }, "exactly one of trace and rates"},
		{"rate mult", func(r *StartRequest) { r.RateMult = 0 }, "rate_mult"},
		{"negative rate", func(r *StartRequest) { r.Rates[2] = -1 }, "rates[2]"},
		{"intervals", func(r *StartRequest) { r.Intervals = 0 }, "intervals"},
		{"time scale", func(r *StartRequest) { r.TimeScaleMS = 1 }, "time_scale_ms"},
		{"workers", func(r *StartRequest) { r.Workers = 3 }, "workers 3"},
		{"alloc length", func(r *StartRequest) { r.Alloc = []int{100} }, "alloc has 1 entries"},
		{"alloc value", func(r *StartRequest) { r.Alloc = []int{100, 0} }, "alloc[1]"},
		{"unknown trace", func(r *StartRequest) { r.Rates, r.Trace = nil, "no-such-trace" }, `trace "no-such-trace"`},
	} {
		r := validStart()
		tc.edit(&r)
		if _, err := c.Start(ctx, r); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "(400)") {
			t.Errorf("%s: %v, want 400 with %q", tc.name, err, tc.want)
		}
	}
	// Malformed bodies.
	for _, body := range []string{"", "{", `{"app":"wc"} {}`, `{"app":"wc","extra":1}`, `[]`} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/run", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(res.Body).Decode(&e) //nolint:errcheck
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.HasPrefix(e.Error, "planner: start request") {
			t.Errorf("body %q: %d %q", body, res.StatusCode, e.Error)
		}
	}
	if err := c.Stop(ctx); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("stop while idle: %v", err)
	}
	if err := c.SetAlloc(ctx, AllocRequest{Workers: []WorkerAlloc{{Worker: 0, Millicores: []int{1, 1}}}}); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("alloc while idle: %v", err)
	}
	if _, err := c.Status(ctx); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("status while idle: %v", err)
	}
	if in, _ := c.Info(ctx); in.State != "idle" {
		t.Errorf("state %q after refused requests, want idle", in.State)
	}
}

// TestServiceReplay runs a short vertical replay: the intervals arrive
// in order with the workers' reports, a valid allocation reaches the
// workers, invalid ones are refused whole, a second start is refused
// while the replay runs, and the result accounts for every input.
func TestServiceReplay(t *testing.T) {
	c, _, prov := startService(t)
	ctx := context.Background()
	req := validStart()
	req.Alloc = []int{700, 700}
	id, err := c.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Start(ctx, req); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("second start: %v, want 409", err)
	}
	var got []IntervalReport
	set := false
	for len(got) < req.Intervals {
		ivs, err := c.Intervals(ctx, len(got), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if ivs.ID != id {
			t.Fatalf("replay %d, want %d", ivs.ID, id)
		}
		got = append(got, ivs.Intervals...)
		if len(got) > 0 && !set {
			for _, bad := range []AllocRequest{
				{Workers: []WorkerAlloc{{Worker: 0, Millicores: []int{900}}}},
				{Workers: []WorkerAlloc{{Worker: 0, Millicores: []int{900, 900}}, {Worker: 7, Millicores: []int{900, 900}}}},
				{Workers: []WorkerAlloc{{Worker: 0, Millicores: []int{900, wire.MaxMillicores + 1}}}},
			} {
				if err := c.SetAlloc(ctx, bad); err == nil || !strings.Contains(err.Error(), "400") {
					t.Errorf("alloc %+v: %v, want 400", bad, err)
				}
			}
			if err := c.SetAlloc(ctx, AllocRequest{Workers: []WorkerAlloc{{Worker: 0, Millicores: []int{900, 900}}}}); err != nil {
				t.Fatal(err)
			}
			set = true
		}
		if ivs.State != "running" && len(ivs.Intervals) == 0 {
			break
		}
	}
	if len(got) != req.Intervals {
		t.Fatalf("%d intervals, want %d", len(got), req.Intervals)
	}
	offered, sawTasks := 0, false
	for i, iv := range got {
		if iv.Index != i {
			t.Fatalf("interval %d has index %d", i, iv.Index)
		}
		offered += iv.Window.Offered
		sawTasks = sawTasks || len(iv.Tasks) == 2
	}
	if !sawTasks || offered == 0 {
		t.Fatalf("no task reports (%v) or nothing offered (%d)", sawTasks, offered)
	}
	var st Status
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if st.State != "running" {
			break
		}
	}
	if st.State != "done" || st.Result == nil || st.Result.Inputs == 0 || st.Result.Inputs != st.Result.Completed+st.Result.Dropped+st.Result.Unfinished {
		t.Fatalf("status %+v", st)
	}
	// The allocation reached the worker (its last report, before the
	// service stopped it).
	ws := prov.current()
	if len(ws) != 0 {
		t.Fatalf("%d workers left running after the replay", len(ws))
	}
	last := got[len(got)-1]
	for _, tk := range last.Tasks {
		if tk.Millicores != 900 {
			t.Errorf("task %d of worker %d at %d mc at the end, want 900", tk.Op, tk.Worker, tk.Millicores)
		}
	}
}

func FuzzDecodeStartRequest(f *testing.F) {
	good, _ := json.Marshal(validStart())
	f.Add(good)
	f.Add([]byte(`{"app":"wc","mode":"vertical","trace":"taxi","rate_mult":0.5,"intervals":3,"time_scale_ms":100}`))
	f.Add([]byte(`{"app":"wc","rates":[1e400]}`))
	f.Add([]byte(`{"alloc":[-1,2,3],"workers":-4}`))
	f.Add([]byte(`{} {}`))
	app := runtime.WordCount()
	base := Config{App: app, Controller: "none", MaxWorkers: 2}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeStartRequest(b)
		if err != nil {
			return
		}
		if err := r.check(base); err != nil {
			return
		}
		// An accepted request is within every bound.
		if r.Intervals < 1 || r.Intervals > MaxIntervals || r.TimeScaleMS < 10 || len(r.Rates) > MaxRates || r.Workers > 2 ||
			(len(r.Alloc) != 0 && len(r.Alloc) != 2) || !(r.RateMult > 0) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

func FuzzDecodeAllocRequest(f *testing.F) {
	f.Add([]byte(`{"workers":[{"worker":0,"millicores":[1,2,3]}]}`))
	f.Add([]byte(`{"workers":[]}`))
	f.Add([]byte(`{"workers":[{"worker":-1}]}`))
	f.Add(bytes.Repeat([]byte("["), 100))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeAllocRequest(b)
		if err == nil && len(r.Workers) == 0 {
			t.Fatal("accepted an empty request")
		}
	})
}
