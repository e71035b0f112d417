package live

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/eval/internal/policytest"
	"streamscale/serve/api"
)

// fakeEndpoint serves one policy with the layout of sc (as serve api
// lists it) and answers every act with choice 4 per task.
func fakeEndpoint(t *testing.T, sc env.Config) *httptest.Server {
	sp := sc.Spaces()
	boxes := map[string]any{}
	for _, k := range sp.Keys {
		boxes[k] = map[string]any{"shape": sp.Observation[k].Shape}
	}
	list := map[string]any{"policies": []any{map[string]any{
		"name": "pred", "profile": sc.App.Name,
		"observation": map[string]any{"keys": sp.Keys, "boxes": boxes},
		"action":      map[string]any{"nvec": sp.Nvec},
	}}}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/policies":
			json.NewEncoder(w).Encode(list) //nolint:errcheck
		case r.Method == http.MethodPost && r.URL.Path == "/v1/policies/pred/act":
			var req struct {
				Observation struct{ Task []float64 } `json:"observation"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Observation.Task) != len(sp.Nvec)*env.TaskFeatures {
				http.Error(w, `{"error":"bad observation"}`, http.StatusBadRequest)
				return
			}
			act := make([]int, len(sp.Nvec))
			for i := range act {
				act[i] = 4
			}
			json.NewEncoder(w).Encode(map[string]any{"action": act}) //nolint:errcheck
		default:
			http.NotFound(w, r)
		}
	}))
}

// TestRemote: the endpoint's policy is checked against the run's layout
// (another profile's layout or an unknown name is refused at start), and
// its answers become the action.
func TestRemote(t *testing.T) {
	o, sc := observer(t, "pred")
	srv := fakeEndpoint(t, sc)
	defer srv.Close()
	ctx := context.Background()
	r, err := NewRemote(ctx, srv.URL, "pred", sc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Act(o.Observe(Measured{}, allocOf(sc, 500)))
	if err != nil || !slices.Equal(a.Choices, []int{4, 4, 4, 4, 4, 4}) {
		t.Fatalf("action %+v, %v", a, err)
	}
	if _, err := NewRemote(ctx, srv.URL, "etl", sc); err == nil || !strings.Contains(err.Error(), "no policy") {
		t.Errorf("unknown policy: %v", err)
	}
	_, etl := observer(t, "etl")
	if _, err := NewRemote(ctx, srv.URL, "pred", etl); err == nil || !strings.Contains(err.Error(), "profile") {
		t.Errorf("policy of another profile: %v", err)
	}
	if _, err := NewRemote(ctx, "ftp://x", "pred", sc); err == nil {
		t.Error("a non-http endpoint accepted")
	}
}

// residualEndpoint serves a follow-biased residual pred policy over
// testRule (serve api, in process) and counts its act requests.
func residualEndpoint(t *testing.T, sc env.Config) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	dir := t.TempDir()
	if err := policytest.WriteFollowResidual(dir, "pred", sc, testRule); err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	var acts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/act") {
			acts.Add(1)
		}
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &acts
}

const testRule = "threshold:measured:target=0.7:tol=0.1:window=10"

// TestRemoteResidual: for a residual policy the Remote runs the base rule
// itself (its memory across observations, Reset with the episode) and
// applies the endpoint's targets: a follow-biased policy's are those of
// the same rule run beside it, step after step, and after Reset again.
func TestRemoteResidual(t *testing.T) {
	o, sc := observer(t, "pred")
	srv, acts := residualEndpoint(t, sc)
	r, err := NewRemote(context.Background(), srv.URL, "pred", sc)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := rulespec.Parse(testRule)
	ref, err := spec.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.Reset(1); err != nil {
			t.Fatal(err)
		}
		if err := ref.Reset(1); err != nil {
			t.Fatal(err)
		}
		for step, mc := range []float64{500, 3000, 3000, 800, 800, 800} {
			obs := o.Observe(Measured{}, allocOf(sc, mc))
			a, err := r.Act(obs)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Act(obs)
			if err != nil {
				t.Fatal(err)
			}
			if a.Choices != nil || !slices.Equal(a.Targets, want.Targets) {
				t.Fatalf("step %d: action %+v, the rule's targets %v", step, a, want.Targets)
			}
		}
	}
	if acts.Load() != 12 {
		t.Errorf("%d act requests, want 12", acts.Load())
	}
	// A policy over bounds the run does not share is refused at start.
	wide := sc
	wide.MaxCPU *= 2
	if _, err := NewRemote(context.Background(), srv.URL, "pred", wide); err == nil || !strings.Contains(err.Error(), "allocations") {
		t.Errorf("a residual policy of other allocation bounds: %v", err)
	}
}

// TestRemoteResidualLive runs the follow-biased residual policy live (4
// intervals of 250 ms on the real runtime, the endpoint on loopback):
// every decision is a request with the rule's targets, none fails, and
// the targets answered are the allocations applied (within the servers'
// capacity, which only lowers them).
func TestRemoteResidualLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	c := liveConfig(t, "pred", 500, 1000, 4, 0.01)
	srv, acts := residualEndpoint(t, c.Scenario)
	r, err := NewRemote(context.Background(), srv.URL, "pred", c.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordActs{c: r}
	c.Controller, c.Name, c.ActTimeout = rec, "ppo", 5*time.Second
	res, info, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if info.ControlFailures != 0 || len(res.Intervals) != 4 || len(rec.targets) < 4 || acts.Load() != int64(len(rec.targets)) {
		t.Fatalf("%d intervals, %d decisions, %d requests, control failures %d (%s)", len(res.Intervals), len(rec.targets), acts.Load(), info.ControlFailures, info.LastFailure)
	}
	exact := 0
	for i, iv := range res.Intervals {
		want := rec.targets[i]
		for k, v := range iv.Applied {
			if v > want[k]+1e-9 {
				t.Fatalf("interval %d task %d: %v mc applied, the policy answered %v", i, k, v, want[k])
			}
		}
		if slices.Equal(iv.Applied, want) {
			exact++
		}
	}
	if exact == 0 {
		t.Errorf("no interval applied the targets answered: %v", rec.targets)
	}
}

// recordActs records the targets of every action its controller gives.
type recordActs struct {
	c       *Remote
	mu      sync.Mutex
	targets [][]float64
}

func (r *recordActs) Reset(seed uint64) error { return r.c.Reset(seed) }

func (r *recordActs) Act(o env.Observation) (env.Action, error) {
	a, err := r.c.Act(o)
	r.mu.Lock()
	r.targets = append(r.targets, slices.Clone(a.Targets))
	r.mu.Unlock()
	return a, err
}
