package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/ppo/policy"
	"streamscale/serve/internal/fixture"
)

const testRule = "threshold:measured:target=0.7:tol=0.1:window=10"

// residualDir writes a pred residual policy over testRule named name
// (follow: its follow-logit bias) beside the random pred and etl ones.
func residualDir(t testing.TB, follow float32) string {
	t.Helper()
	dir := testDir(t)
	if _, err := fixture.WriteResidual(dir, "res", "pred", testRule, 16, 5, follow); err != nil {
		t.Fatal(err)
	}
	return dir
}

type wireResidual struct {
	Action  []int     `json:"action"`
	Choices []string  `json:"choices"`
	Targets []float64 `json:"targets"`
	Value   float64   `json:"value"`
	Version string    `json:"version"`
}

type residualReq struct {
	Observation wireObs   `json:"observation"`
	RuleTargets []float64 `json:"rule_targets"`
}

// TestResidualMatchesController: along an episode driven by the residual
// controller the evaluation builds (policy.NewResidualController), the
// endpoint, sent each observation and the targets of a base rule the
// client runs, answers the controller's targets exactly; the
// follow-biased policy answers the rule's own, the other does not.
func TestResidualMatchesController(t *testing.T) {
	sc, err := fixture.Scenario("pred")
	if err != nil {
		t.Fatal(err)
	}
	rule, err := rulespec.Parse(testRule)
	if err != nil {
		t.Fatal(err)
	}
	for _, follow := range []float32{40, -40} {
		dir := residualDir(t, follow)
		s := newTestServer(t, dir, "")
		p, card := readPolicy(t, dir, "res")
		ctrl, err := policy.NewResidualController(p, card.Residual, sc, true)
		if err != nil {
			t.Fatal(err)
		}
		base, err := rule.New(sc)
		if err != nil {
			t.Fatal(err)
		}
		e, err := env.New(sc)
		if err != nil {
			t.Fatal(err)
		}
		obs, _, err := e.Reset(3)
		if err != nil {
			t.Fatal(err)
		}
		if err := ctrl.Reset(3); err != nil {
			t.Fatal(err)
		}
		if err := base.Reset(3); err != nil {
			t.Fatal(err)
		}
		deviated := false
		for step := range 12 {
			want, err := ctrl.Act(obs)
			if err != nil {
				t.Fatal(err)
			}
			ra, err := base.Act(obs)
			if err != nil {
				t.Fatal(err)
			}
			w := do(s, "POST", "/v1/policies/res/act", mustJSON(t, residualReq{toWire(obs), ra.Targets}))
			okStatus(t, w)
			got := decodeJSON[wireResidual](t, w)
			if !slices.Equal(got.Targets, want.Targets) {
				t.Fatalf("follow %v, step %d: targets %v, the controller's %v", follow, step, got.Targets, want.Targets)
			}
			for k, c := range got.Action {
				if got.Choices[k] != residual.Choices[c] {
					t.Fatalf("choice %d named %q for index %d", k, got.Choices[k], c)
				}
			}
			if follow > 0 && !slices.Equal(got.Targets, ra.Targets) {
				t.Fatalf("step %d: the follow-biased policy answers %v, the rule's targets are %v", step, got.Targets, ra.Targets)
			}
			deviated = deviated || !slices.Equal(got.Targets, ra.Targets)
			sr, err := e.Step(want)
			if err != nil {
				t.Fatal(err)
			}
			obs = sr.Obs
		}
		if follow < 0 && !deviated {
			t.Error("a policy biased against following answers the rule's targets at every step")
		}
	}
}

// TestResidualRequests: batch, sampled and probability answers carry
// targets; the listing and the v2 metadata name the base rule and the
// rule_targets input; bad rule_targets are refused naming the field, and
// a plain policy refuses them.
func TestResidualRequests(t *testing.T) {
	s := newTestServer(t, residualDir(t, 40), "")
	o, err := fixture.Observation("pred")
	if err != nil {
		t.Fatal(err)
	}
	ob := string(mustJSON(t, toWire(o)))
	rt := "[900,1000,1100,1200,1300,1400]"
	follow := []float64{900, 1000, 1100, 1200, 1300, 1400}

	w := do(s, "POST", "/v1/policies/res/act/batch", []byte(`{"observations":[`+ob+`,`+ob+`],"rule_targets":[`+rt+`,[0,0,0,0,0,0]],"probabilities":true}`))
	okStatus(t, w)
	var batch struct {
		Results []struct {
			wireResidual
			Probabilities [][]float64 `json:"probabilities"`
		} `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &batch); err != nil || len(batch.Results) != 2 {
		t.Fatalf("batch: %v %s", err, w.Body)
	}
	lo := s.reg.Load().byName["res"].res.MinCPU
	if r := batch.Results; !slices.Equal(r[0].Targets, follow) || slices.ContainsFunc(r[1].Targets, func(v float64) bool { return v != lo }) || len(r[0].Probabilities) != 6 {
		t.Errorf("batch results %+v", r)
	}
	w = do(s, "POST", "/v1/policies/res/act", []byte(`{"observation":`+ob+`,"rule_targets":`+rt+`,"sample":true,"seed":4}`))
	okStatus(t, w)
	if got := decodeJSON[wireResidual](t, w); len(got.Targets) != 6 || len(got.Choices) != 6 {
		t.Errorf("sampled: %+v", got)
	}

	w = do(s, "GET", "/v1/policies", nil)
	okStatus(t, w)
	var list struct {
		Policies []policyInfo `json:"policies"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Policies {
		switch {
		case p.Name == "res" && (p.Residual == nil || p.Residual.Base != testRule || !slices.Equal(p.Action.Choices, residual.Choices[:]) || p.Action.DeltaMillicores != nil):
			t.Errorf("listing of the residual policy: %+v %+v", p.Residual, p.Action)
		case p.Name != "res" && (p.Residual != nil || p.Action.Choices != nil):
			t.Errorf("listing of %s names a residual record", p.Name)
		}
	}
	w = do(s, "GET", "/v2/models/res", nil)
	okStatus(t, w)
	if b := w.Body.String(); !strings.Contains(b, `{"name":"rule_targets","datatype":"FP64","shape":[-1,6]}`) || !strings.Contains(b, `{"name":"targets","datatype":"FP64","shape":[-1,6]}`) {
		t.Errorf("v2 metadata %s", b)
	}

	for _, tc := range []struct {
		path, body string
		status     int
		field      string
	}{
		{"/v1/policies/res/act", `{"observation":` + ob + `}`, 400, "rule_targets"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[1,2,3,4,5]}`, 422, "rule_targets"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[1,2,3,4,5,6,7]}`, 422, "rule_targets"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[1,2,3,"NaN",5,6]}`, 400, "rule_targets[3]"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[1,2,3,NaN,5,6]}`, 400, ""},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[1,2,3,1e999,5,6]}`, 422, "rule_targets[3]"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[1,2,3,-1,5,6]}`, 422, "rule_targets[3]"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[1,2,3,1e10,5,6]}`, 422, "rule_targets[3]"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":null}`, 400, "rule_targets"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":` + rt + `,"rule_targets":` + rt + `}`, 400, "rule_targets"},
		{"/v1/policies/res/act", `{"observation":` + ob + `,"rule_targets":[` + rt + `]}`, 400, "rule_targets[0]"},
		{"/v1/policies/res/act/batch", `{"observations":[` + ob + `,` + ob + `],"rule_targets":[` + rt + `]}`, 422, "rule_targets"},
		{"/v1/policies/res/act/batch", `{"observations":[` + ob + `],"rule_targets":[` + rt + `,` + rt + `]}`, 422, "rule_targets"},
		{"/v1/policies/res/act/batch", `{"observations":[` + ob + `],"rule_targets":` + rt + `}`, 400, "rule_targets[0]"},
		{"/v1/policies/res/act/batch", `{"observations":[` + ob + `],"rule_targets":[[1,2,3,4,5,-6]]}`, 422, "rule_targets[0][5]"},
		{"/v1/policies/pred/act", `{"observation":` + ob + `,"rule_targets":` + rt + `}`, 400, "rule_targets"},
	} {
		w := do(s, "POST", tc.path, []byte(tc.body))
		if w.Code != tc.status {
			t.Errorf("%s %.120s…: status %d (%s), want %d", tc.path, strings.TrimPrefix(tc.body, `{"observation":`+ob), w.Code, w.Body, tc.status)
			continue
		}
		if got := decodeJSON[wireError](t, w); got.Field != tc.field {
			t.Errorf("%s %.120s: field %q (%s), want %q", tc.path, strings.TrimPrefix(tc.body, `{"observation":`+ob), got.Field, got.Error, tc.field)
		}
	}
}

// TestResidualV2: the v2 route takes rule_targets as an input tensor and
// returns the targets the v1 route does; missing, misshapen, out-of-range
// or unasked-for rule_targets are 400s.
func TestResidualV2(t *testing.T) {
	s := newTestServer(t, residualDir(t, -40), "")
	o, err := fixture.Observation("pred")
	if err != nil {
		t.Fatal(err)
	}
	rule := []float64{900, 1000, 1100, 1200, 1300, 1400}
	w := do(s, "POST", "/v1/policies/res/act", mustJSON(t, residualReq{toWire(o), rule}))
	okStatus(t, w)
	want := decodeJSON[wireResidual](t, w)
	sp := s.reg.Load().byName["res"].card.Spaces
	in := func(name string, data any, shape ...int) map[string]any {
		return map[string]any{"name": name, "datatype": "FP64", "shape": shape, "data": data}
	}
	obsIn := func() []any {
		return []any{
			in("app", o.App, append([]int{1}, sp.Observation["app"].Shape...)...),
			in("server", o.Server, append([]int{1}, sp.Observation["server"].Shape...)...),
			in("task", o.Task, append([]int{1}, sp.Observation["task"].Shape...)...),
		}
	}
	body := map[string]any{"inputs": append(obsIn(), in("rule_targets", rule, 1, 6))}
	w = do(s, "POST", "/v2/models/res/infer", mustJSON(t, body))
	okStatus(t, w)
	var resp struct {
		Outputs []struct {
			Name string    `json:"name"`
			Data []float64 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || len(resp.Outputs) != 3 || resp.Outputs[2].Name != "targets" {
		t.Fatalf("v2 answer %s (%v)", w.Body, err)
	}
	if !slices.Equal(resp.Outputs[2].Data, want.Targets) {
		t.Errorf("v2 targets %v, v1 %v", resp.Outputs[2].Data, want.Targets)
	}
	for _, tc := range []struct {
		name   string
		inputs []any
		model  string
		want   string
	}{
		{"missing", obsIn(), "res", "rule_targets is missing"},
		{"wrong shape", append(obsIn(), in("rule_targets", rule[:5], 1, 5)), "res", "shape"},
		{"wrong length", append(obsIn(), in("rule_targets", rule[:5], 1, 6)), "res", "data"},
		{"negative", append(obsIn(), in("rule_targets", []float64{1, 2, 3, 4, 5, -6}, 1, 6)), "res", "inputs[3].data[5]"},
		{"twice", append(obsIn(), in("rule_targets", rule, 1, 6), in("rule_targets", rule, 1, 6)), "res", "twice"},
		{"plain policy", append(obsIn(), in("rule_targets", rule, 1, 6)), "pred", "only to a residual policy"},
	} {
		w := do(s, "POST", "/v2/models/"+tc.model+"/infer", mustJSON(t, map[string]any{"inputs": tc.inputs}))
		if w.Code != 400 || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", tc.name, w.Code, w.Body, tc.want)
		}
	}
	w = do(s, "POST", "/v2/models/pred/infer", []byte(`{"inputs":[],"outputs":[{"name":"targets"}]}`))
	if w.Code != 400 || !strings.Contains(w.Body.String(), "not an output") {
		t.Errorf("targets of a plain policy: %d %s", w.Code, w.Body)
	}
}

// TestResidualManifest: a manifest directory whose default set holds a
// residual policy loads (as serve api's default policies will), and a
// residual card the server cannot run fails the load naming the policy.
func TestResidualManifest(t *testing.T) {
	dir := setsDir(t, "manifest.json")
	if err := os.RemoveAll(filepath.Join(dir, "default", "pred")); err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.WriteResidual(filepath.Join(dir, "default"), "pred", "pred", testRule, 16, 6, 0); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, dir, "")
	if e := s.reg.Load().byName["pred"]; e == nil || e.res == nil || e.set != "default" {
		t.Fatalf("the default set's pred is not served as a residual policy")
	}
	// A base rule this build does not know.
	card := filepath.Join(dir, "default", "pred", policy.FileName+".json")
	b, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(card, []byte(strings.Replace(string(b), testRule, "nosuchrule", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// reloadFails: a fresh server over dir fails its load naming the
	// policy and want.
	reloadFails := func(what, want string) {
		t.Helper()
		s, err := New(Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "policy pred") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", what, err)
		}
	}
	reloadFails("a residual policy over an unknown rule", "base rule")
	// A policy with a temporal context: its features need the episode's
	// memory, which the endpoint does not keep.
	if _, err := fixture.WriteResidualContext(filepath.Join(dir, "default"), "pred", "pred", testRule, residual.Trend, 16, 6, 0); err != nil {
		t.Fatal(err)
	}
	reloadFails("a residual policy with the trend context", "not served")
}
