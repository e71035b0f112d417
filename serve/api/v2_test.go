package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"streamscale/env"
)

// v2Obs builds the inputs of an inference request for obs: flat
// row-major data, or nested to the tensor's shape.
func v2Inputs(sp env.Spaces, obs []env.Observation, nested bool) []map[string]any {
	var ins []map[string]any
	for _, key := range []string{"task", "app", "server"} { // any order
		box := sp.Observation[key]
		var flat []float64
		for _, o := range obs {
			switch key {
			case "app":
				flat = append(flat, o.App...)
			case "server":
				flat = append(flat, o.Server...)
			case "task":
				flat = append(flat, o.Task...)
			}
		}
		shape := append([]int{len(obs)}, box.Shape...)
		var data any = flat
		if nested {
			data = nest(flat, shape)
		}
		ins = append(ins, map[string]any{"name": key, "shape": shape, "datatype": "FP32", "data": data})
	}
	return ins
}

func nest(flat []float64, shape []int) any {
	if len(shape) == 1 {
		return flat
	}
	n := len(flat) / shape[0]
	out := make([]any, shape[0])
	for i := range out {
		out[i] = nest(flat[i*n:(i+1)*n], shape[1:])
	}
	return out
}

// f32 rounds to float32: an FP32 datum is printed as the shortest decimal
// that reads back as the same float32.
func f32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}

type v2Out struct {
	Name     string    `json:"name"`
	Datatype string    `json:"datatype"`
	Shape    []int     `json:"shape"`
	Data     []float64 `json:"data"`
}

type v2Resp struct {
	ModelName    string  `json:"model_name"`
	ModelVersion string  `json:"model_version"`
	ID           string  `json:"id"`
	Outputs      []v2Out `json:"outputs"`
}

// TestV2Health: liveness always; server readiness 400 before the first
// load, 200 after, 400 while draining; model readiness likewise, 404 for
// an unknown model or version. Health bodies are empty.
func TestV2Health(t *testing.T) {
	s, err := New(Config{Dir: testDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	check := func(path string, want int) {
		t.Helper()
		w := do(s, "GET", path, nil)
		if w.Code != want {
			t.Fatalf("GET %s: %d %s, want %d", path, w.Code, w.Body, want)
		}
		if want != 404 && w.Body.Len() != 0 {
			t.Fatalf("GET %s: body %q, want none", path, w.Body)
		}
	}
	check("/v2/health/live", 200)
	check("/v2/health/ready", 400)
	check("/v2/models/pred/ready", 400)
	if w := do(s, "POST", "/v2/models/pred/infer", []byte(`{}`)); w.Code != 503 {
		t.Fatalf("infer before load: %d", w.Code)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	check("/v2/health/ready", 200)
	check("/v2/models/pred/ready", 200)
	check("/v2/models/pred/versions/"+s.Policies()["pred"]+"/ready", 200)
	check("/v2/models/pred/versions/0123/ready", 404)
	check("/v2/models/nope/ready", 404)
	w := do(s, "GET", "/v2/models/nope/ready", nil)
	if e := decodeJSON[struct{ Error string }](t, w); !strings.Contains(e.Error, `no model "nope"`) {
		t.Fatalf("unknown model error %q", e.Error)
	}
	s.Drain()
	check("/v2/health/live", 200)
	check("/v2/health/ready", 400)
	check("/v2/models/pred/ready", 400)
}

// TestV2Metadata: server and model metadata as the protocol's
// $metadata_server_response and $metadata_model_response.
func TestV2Metadata(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	w := do(s, "GET", "/v2", nil)
	okStatus(t, w)
	srv := decodeJSON[struct {
		Name       string   `json:"name"`
		Version    string   `json:"version"`
		Extensions []string `json:"extensions"`
	}](t, w)
	if srv.Name != "streamscale" || srv.Version == "" || srv.Extensions == nil {
		t.Fatalf("server metadata %+v", srv)
	}
	_, card := readPolicy(t, dir, "pred")
	for _, path := range []string{"/v2/models/pred", "/v2/models/pred/versions/" + card.WeightsSHA256} {
		w = do(s, "GET", path, nil)
		okStatus(t, w)
		m := decodeJSON[struct {
			Name     string     `json:"name"`
			Versions []string   `json:"versions"`
			Platform string     `json:"platform"`
			Inputs   []v2Tensor `json:"inputs"`
			Outputs  []v2Tensor `json:"outputs"`
		}](t, w)
		var wantIn []v2Tensor
		for _, k := range card.Spaces.Keys {
			wantIn = append(wantIn, v2Tensor{k, "FP32", append([]int{-1}, card.Spaces.Observation[k].Shape...)})
		}
		wantOut := []v2Tensor{{"action", "INT64", []int{-1, len(card.Spaces.Nvec)}}, {"value", "FP32", []int{-1, 1}}}
		eq := func(a, b []v2Tensor) bool {
			return slices.EqualFunc(a, b, func(x, y v2Tensor) bool {
				return x.Name == y.Name && x.Datatype == y.Datatype && slices.Equal(x.Shape, y.Shape)
			})
		}
		if m.Name != "pred" || !slices.Equal(m.Versions, []string{card.WeightsSHA256}) || m.Platform != "streamscale_ppo" || !eq(m.Inputs, wantIn) || !eq(m.Outputs, wantOut) {
			t.Fatalf("%s: %+v", path, m)
		}
	}
	for _, path := range []string{"/v2/models/nope", "/v2/models/pred/versions/abc"} {
		if w := do(s, "GET", path, nil); w.Code != 404 || !strings.HasPrefix(w.Body.String(), `{"error":"api: `) {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
	}
}

// TestV2InferMatchesPolicy: the protocol's inference request (the shape of
// its published example: id, named inputs with shape, datatype and data,
// requested outputs) answers the policy's deterministic actions and
// values, flat or nested data alike, in any input order, with the id
// echoed and only the outputs asked for.
func TestV2InferMatchesPolicy(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	for _, name := range []string{"pred", "etl"} {
		p, card := readPolicy(t, dir, name)
		obs := testObservations(t, name, card.Spaces, 5)
		dims := len(card.Spaces.Nvec)
		var wantAct []float64
		var wantVal []float64
		for _, o := range obs {
			a := make([]int, dims)
			v, err := p.Act(o.Flatten(nil), true, nil, a)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range a {
				wantAct = append(wantAct, float64(x))
			}
			wantVal = append(wantVal, float64(float32(v)))
		}
		for _, nested := range []bool{false, true} {
			body := mustJSON(t, map[string]any{"id": "42", "inputs": v2Inputs(card.Spaces, obs, nested)})
			w := do(s, "POST", "/v2/models/"+name+"/infer", body)
			okStatus(t, w)
			got := decodeJSON[v2Resp](t, w)
			if got.ModelName != name || got.ModelVersion != card.WeightsSHA256 || got.ID != "42" || len(got.Outputs) != 2 {
				t.Fatalf("%s: %+v", name, got)
			}
			a, v := got.Outputs[0], got.Outputs[1]
			if a.Name != "action" || a.Datatype != "INT64" || !slices.Equal(a.Shape, []int{len(obs), dims}) || !slices.Equal(a.Data, wantAct) {
				t.Fatalf("%s nested=%v: action %+v, want data %v", name, nested, a, wantAct)
			}
			if v.Name != "value" || v.Datatype != "FP32" || !slices.Equal(v.Shape, []int{len(obs), 1}) || !slices.Equal(f32(v.Data), f32(wantVal)) {
				t.Fatalf("%s nested=%v: value %+v, want data %v", name, nested, v, wantVal)
			}
		}
		// One observation, only the value, through the version route; no id.
		body := mustJSON(t, map[string]any{"inputs": v2Inputs(card.Spaces, obs[:1], false), "outputs": []map[string]any{{"name": "value"}}, "parameters": map[string]any{}})
		w := do(s, "POST", "/v2/models/"+name+"/versions/"+card.WeightsSHA256+"/infer", body)
		okStatus(t, w)
		if strings.Contains(w.Body.String(), `"id"`) {
			t.Fatalf("id without one in the request: %s", w.Body)
		}
		got := decodeJSON[v2Resp](t, w)
		if len(got.Outputs) != 1 || got.Outputs[0].Name != "value" || !slices.Equal(f32(got.Outputs[0].Data), f32(wantVal[:1])) {
			t.Fatalf("%s: value only: %+v", name, got)
		}
	}
}

// TestV2InferRefuses: every malformed or mismatched request is refused
// with the protocol's error object and status, naming what was wrong.
func TestV2InferRefuses(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	_, card := readPolicy(t, dir, "pred")
	obs := testObservations(t, "pred", card.Spaces, 2)
	good := func() map[string]any { return map[string]any{"inputs": v2Inputs(card.Spaces, obs, false)} }
	input := func(m map[string]any, name string) map[string]any {
		for _, in := range m["inputs"].([]map[string]any) {
			if in["name"] == name {
				return in
			}
		}
		t.Fatalf("no input %s", name)
		return nil
	}
	raw := func(s string) func() []byte { return func() []byte { return []byte(s) } }
	with := func(edit func(m map[string]any)) func() []byte {
		return func() []byte {
			m := good()
			edit(m)
			return mustJSON(t, m)
		}
	}
	appData := `[` + strings.Repeat(`0,`, 10) + `0]`
	for _, tc := range []struct {
		name   string
		body   func() []byte
		status int
		inMsg  string
	}{
		{"not json", raw(`{"inputs":[`), 400, "malformed JSON"},
		{"trailing", raw(`{"inputs":[]} x`), 400, "malformed JSON"},
		{"no inputs", raw(`{"id":"1"}`), 400, "key inputs is missing"},
		{"unknown key", with(func(m map[string]any) { m["inptus"] = 1 }), 400, "unknown key inptus"},
		{"duplicate key", raw(`{"id":"1","id":"2","inputs":[]}`), 400, "duplicate key id"},
		{"id not a string", raw(`{"id":42,"inputs":[]}`), 400, "id is a number, want a string"},
		{"parameter", with(func(m map[string]any) { m["parameters"] = map[string]any{"sample": true} }), 400, "unknown parameter parameters.sample"},
		{"unknown input key", with(func(m map[string]any) { input(m, "app")["dtype"] = "FP32" }), 400, "unknown key inputs[1].dtype"},
		{"duplicate input key", raw(`{"inputs":[{"name":"app","name":"app","shape":[1,11],"datatype":"FP32","data":` + appData + `}]}`), 400, "duplicate key inputs[0].name"},
		{"missing data", with(func(m map[string]any) { delete(input(m, "app"), "data") }), 400, "key inputs[1].data is missing"},
		{"unknown input", with(func(m map[string]any) { input(m, "app")["name"] = "apps" }), 400, `inputs[1].name "apps" is not an input of the model (app, server, task)`},
		{"missing input", with(func(m map[string]any) { m["inputs"] = m["inputs"].([]map[string]any)[:2] }), 400, "input server is missing"},
		{"repeated input", with(func(m map[string]any) { m["inputs"] = append(m["inputs"].([]map[string]any), input(m, "app")) }), 400, `input "app" is given twice`},
		{"datatype", with(func(m map[string]any) { input(m, "app")["datatype"] = "INT32" }), 400, `inputs[1].datatype "INT32"`},
		{"shape", with(func(m map[string]any) { input(m, "app")["shape"] = []int{2, 12} }), 400, "inputs[1].shape [2 12]: input app has shape [batch, 11]"},
		{"shape not integers", with(func(m map[string]any) { input(m, "app")["shape"] = []float64{2, 11.5} }), 400, "is not a 32-bit integer"},
		{"batch sizes differ", with(func(m map[string]any) {
			in := input(m, "app")
			in["shape"], in["data"] = []int{1, 11}, obs[0].App
		}), 400, "batch size 1, an earlier input has 2"},
		{"batch of zero", raw(`{"inputs":[{"name":"app","shape":[0,11],"datatype":"FP32","data":[]}]}`), 400, "batch size must be at least 1"},
		{"batch too large", raw(`{"inputs":[{"name":"app","shape":[257,11],"datatype":"FP32","data":[]}]}`), 413, "limit 256"},
		{"short data", with(func(m map[string]any) { in := input(m, "app"); in["data"] = in["data"].([]float64)[:21] }), 400, "inputs[1].data has 21 values, shape [2 11] needs 22"},
		{"ragged data", with(func(m map[string]any) { input(m, "app")["data"] = []any{obs[0].App, obs[1].App[:10]} }), 400, "inputs[1].data[1] has 10 elements, another array at its depth 11"},
		{"mixed nesting", with(func(m map[string]any) { input(m, "app")["data"] = []any{1.0, obs[1].App} }), 400, "data mixes numbers and arrays"},
		{"string datum", with(func(m map[string]any) { input(m, "app")["data"] = []any{"NaN"} }), 400, "inputs[1].data[0] is a string, want a number"},
		{"overflow", raw(`{"inputs":[{"name":"app","shape":[1,11],"datatype":"FP32","data":[1e999]}]}`), 400, "overflows float64"},
		{"out of bounds", with(func(m map[string]any) { input(m, "app")["data"].([]float64)[13] = 1e9 }), 400, "inputs[1].data[13] = 1e+09 (observation 1, app[2]) is outside"},
		{"unknown output", with(func(m map[string]any) { m["outputs"] = []map[string]any{{"name": "logits"}} }), 400, `outputs[0].name "logits" is not an output`},
		{"repeated output", with(func(m map[string]any) { m["outputs"] = []map[string]any{{"name": "value"}, {"name": "value"}} }), 400, `output "value" is requested twice`},
		{"deep data", raw(`{"inputs":[{"name":"app","shape":[1,11],"datatype":"FP32","data":[[[[[1]]]]]}]}`), 400, "nested deeper than 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(s, "POST", "/v2/models/pred/infer", tc.body())
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			var e map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || len(e) != 1 || !strings.Contains(e["error"], tc.inMsg) {
				t.Fatalf("body %s, want {\"error\"} naming %q", w.Body, tc.inMsg)
			}
		})
	}
	for _, tc := range []struct {
		path   string
		hdr    []string
		status int
	}{
		{"/v2/models/nope/infer", nil, 404},
		{"/v2/models/pred/versions/abc/infer", nil, 404},
		{"/v2/models/pred/infer", []string{"Content-Type", "text/plain"}, 415},
	} {
		w := do(s, "POST", tc.path, mustJSON(t, good()), tc.hdr...)
		if w.Code != tc.status || !strings.HasPrefix(w.Body.String(), `{"error":"api: `) {
			t.Errorf("%s %v: %d %s, want %d", tc.path, tc.hdr, w.Code, w.Body, tc.status)
		}
	}
	big := bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1)
	if w := do(s, "POST", "/v2/models/pred/infer", big); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", w.Code)
	}
}

// FuzzDecodeInfer: decodeInfer never panics; what it refuses gets a 400
// or 413 with an "api: " message; what it accepts is valid JSON to
// encoding/json, has 1 to maxBatch observations within the bounds, and
// decodes the same when re-encoded flat by encoding/json. Every body is
// decoded for a plain model and for a residual one (whose rule_targets
// input must be in [0, maxRuleTarget]).
func FuzzDecodeInfer(f *testing.F) {
	in := func(name string, n int, data string) string {
		return `{"name":"` + name + `","shape":[1,` + string(rune('0'+n)) + `],"datatype":"FP32","data":` + data + `}`
	}
	ok := `{"id":"42","inputs":[` + in("app", 2, "[1,2]") + `,` + in("server", 2, "[3,4]") + `,` + in("task", 3, "[5,6,7]") + `],"outputs":[{"name":"action"}]}`
	f.Add([]byte(ok))
	f.Add([]byte(`{"inputs":[` + in("app", 2, "[[1,2]]") + `,` + in("server", 2, "[[3,4]]") + `,` + in("task", 3, "[[5,6,7]]") + `],"parameters":{}}`))
	f.Add([]byte(`{"inputs":[` + in("app", 2, "[1,2]") + `,` + in("app", 2, "[1,2]") + `]}`))
	f.Add([]byte(`{"inputs":[{"name":"task","shape":[2,3],"datatype":"FP64","data":[1,2,3,4,5,6]}]}`))
	f.Add([]byte(`{"inp\u0075ts":[],"id":"\ud800"}`))
	f.Add([]byte(`{"inputs":[{"data":[[1],[2,3]]}]}`))
	f.Add([]byte(`{"inputs":[{"data":[1e999]}]}`))
	f.Add([]byte(`{"inputs":[` + in("app", 2, "[1,2]") + `,` + in("server", 2, "[3,4]") + `,` + in("task", 3, "[5,6,7]") + `,` + in("rule_targets", 2, "[500,1e3]") + `],"outputs":[{"name":"targets"}]}`))
	plain, res := smallLayout(), residualLayout()
	m := &v2Model{shapes: [numKeys][]int{{2}, {2}, {3}}}
	mr := &v2Model{shapes: m.shapes, rule: res.rule}
	var req actRequest
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecodeInfer(t, body, plain, m, &req)
		fuzzDecodeInfer(t, body, res, mr, &req)
	})
}

func fuzzDecodeInfer(t *testing.T, body []byte, lay *layout, m *v2Model, req *actRequest) {
	got, err := decodeInfer(body, lay, m, 4, req)
	if err != nil {
		if s := err.Status(); s != 400 && s != 413 && s != 422 {
			t.Fatalf("status %d: %v", s, err)
		}
		if !strings.HasPrefix(err.Msg, "api: ") {
			t.Fatalf("message %q", err.Msg)
		}
		return
	}
	if !json.Valid(body) {
		t.Fatalf("accepted what encoding/json calls invalid: %q", body)
	}
	if req.n < 1 || req.n > 4 || len(req.obs) < req.n*lay.size {
		t.Fatalf("accepted %d observations", req.n)
	}
	obs := slices.Clone(req.obs[:req.n*lay.size])
	for i, v := range obs {
		if !(v >= lay.low[i%lay.size] && v <= lay.high[i%lay.size]) {
			t.Fatalf("value %d = %v outside its bounds", i, v)
		}
	}
	var rule []float64
	if m.rule > 0 {
		if req.ruleRows != req.n || len(req.rule) != req.n*m.rule {
			t.Fatalf("%d rows of %d rule targets for %d observations", req.ruleRows, len(req.rule), req.n)
		}
		rule = slices.Clone(req.rule)
		for i, v := range rule {
			if !(v >= 0 && v <= maxRuleTarget) {
				t.Fatalf("rule target %d = %v accepted", i, v)
			}
		}
	}
	// Re-encode flat and decode again.
	var ins []map[string]any
	for k := range numKeys {
		var data []float64
		for r := range req.n {
			data = append(data, obs[r*lay.size+lay.off[k]:r*lay.size+lay.off[k]+lay.n[k]]...)
		}
		ins = append(ins, map[string]any{"name": keyNames[k], "shape": []int{req.n, lay.n[k]}, "datatype": "FP64", "data": data})
	}
	if m.rule > 0 {
		ins = append(ins, map[string]any{"name": ruleTargetsKey, "shape": []int{req.n, m.rule}, "datatype": "FP64", "data": rule})
	}
	again := map[string]any{"inputs": ins}
	if got.id != nil {
		again["id"] = *got.id
	}
	b, jerr := json.Marshal(again)
	if jerr != nil {
		t.Fatal(jerr)
	}
	if _, err := decodeInfer(b, lay, m, 4, req); err != nil {
		t.Fatalf("re-encoded request refused: %v", err)
	}
	if !slices.Equal(req.obs[:req.n*lay.size], obs) || !slices.Equal(req.rule[:len(rule)], rule) {
		t.Fatalf("re-encoded request decodes to %v %v, first %v %v", req.obs, req.rule, obs, rule)
	}
}
