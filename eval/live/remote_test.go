package live

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"streamscale/env"
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
