package api

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"streamscale/env"
	"streamscale/ppo/policy"
	"streamscale/serve/internal/fixture"
)

// testObservations are the fixture's realistic observation plus random
// ones inside the bounds.
func testObservations(t *testing.T, profile string, sp env.Spaces, n int) []env.Observation {
	t.Helper()
	real, err := fixture.Observation(profile)
	if err != nil {
		t.Fatal(err)
	}
	obs := []env.Observation{real}
	rng := rand.New(rand.NewPCG(7, 7))
	for len(obs) < n {
		obs = append(obs, randomObs(sp, rng))
	}
	return obs
}

// The act response equals what the policy's Act returns in-process:
// deterministic mode bit for bit, sample mode as a Controller reset with
// the same seed, reproducibly.
func TestActMatchesPolicy(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	for _, name := range []string{"pred", "etl"} {
		p, card := readPolicy(t, dir, name)
		for i, o := range testObservations(t, name, card.Spaces, 12) {
			want := make([]int, len(p.Nvec()))
			v, err := p.Act(o.Flatten(nil), true, nil, want)
			if err != nil {
				t.Fatal(err)
			}
			w := do(s, "POST", "/v1/policies/"+name+"/act", mustJSON(t, map[string]any{"observation": toWire(o)}))
			okStatus(t, w)
			got := decodeJSON[wireResult](t, w)
			if !slices.Equal(got.Action, want) || math.Float64bits(got.Value) != math.Float64bits(v) || got.Version != card.WeightsSHA256 {
				t.Fatalf("%s obs %d: got %v %v %s, want %v %v %s", name, i, got.Action, got.Value, got.Version, want, v, card.WeightsSHA256)
			}
			for d, a := range want {
				if got.Deltas[d] != env.DeltaMillicores[a] {
					t.Fatalf("%s obs %d: delta %d is %v, want %v", name, i, d, got.Deltas[d], env.DeltaMillicores[a])
				}
			}

			// Sampling with a seed: the Controller's first action after Reset(seed).
			seed := uint64(1000 + i)
			c, err := policy.NewController(p, card.Spaces)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeterministic(false)
			c.Reset(seed)
			ca, err := c.Act(o)
			if err != nil {
				t.Fatal(err)
			}
			body := mustJSON(t, map[string]any{"observation": toWire(o), "sample": true, "seed": seed})
			for range 2 {
				w := do(s, "POST", "/v1/policies/"+name+"/act", body)
				okStatus(t, w)
				if got := decodeJSON[wireResult](t, w); !slices.Equal(got.Action, ca.Choices) {
					t.Fatalf("%s obs %d seed %d: sampled %v, controller %v", name, i, seed, got.Action, ca.Choices)
				}
			}
		}
	}
}

// Sampling depends on the seed: over a few seeds the actions differ.
func TestSampleSeedMatters(t *testing.T) {
	s := newTestServer(t, "", "")
	o, err := fixture.Observation("etl")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := range 8 {
		w := do(s, "POST", "/v1/policies/etl/act", mustJSON(t, map[string]any{"observation": toWire(o), "deterministic": false, "seed": seed}))
		okStatus(t, w)
		seen[string(mustJSON(t, decodeJSON[wireResult](t, w).Action))] = true
	}
	if len(seen) < 2 {
		t.Fatalf("8 seeds gave %d distinct actions", len(seen))
	}
}

// A batch returns, in order, what single requests return; a sampled batch
// is one Controller acting on the observations in order.
func TestBatchMatchesSingle(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	p, card := readPolicy(t, dir, "etl")
	obs := testObservations(t, "etl", card.Spaces, 17)
	var wire []wireObs
	for _, o := range obs {
		wire = append(wire, toWire(o))
	}
	type batchResp struct {
		Results []wireResult `json:"results"`
		Version string       `json:"version"`
	}
	w := do(s, "POST", "/v1/policies/etl/act/batch", mustJSON(t, map[string]any{"observations": wire, "probabilities": true}))
	okStatus(t, w)
	br := decodeJSON[batchResp](t, w)
	if len(br.Results) != len(obs) || br.Version != card.WeightsSHA256 {
		t.Fatalf("%d results version %s", len(br.Results), br.Version)
	}
	for i, o := range obs {
		w := do(s, "POST", "/v1/policies/etl/act", mustJSON(t, map[string]any{"observation": toWire(o), "probabilities": true}))
		okStatus(t, w)
		one := decodeJSON[wireResult](t, w)
		one.Version = ""
		if string(mustJSON(t, one)) != string(mustJSON(t, br.Results[i])) {
			t.Fatalf("obs %d: batch %+v, single %+v", i, br.Results[i], one)
		}
	}

	c, err := policy.NewController(p, card.Spaces)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeterministic(false)
	c.Reset(99)
	w = do(s, "POST", "/v1/policies/etl/act/batch", mustJSON(t, map[string]any{"observations": wire, "sample": true, "seed": 99}))
	okStatus(t, w)
	br = decodeJSON[batchResp](t, w)
	for i, o := range obs {
		a, err := c.Act(o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Choices, br.Results[i].Action) {
			t.Fatalf("obs %d: batch sampled %v, controller %v", i, br.Results[i].Action, a.Choices)
		}
	}
}

// referenceProbs is an obviously-correct float64 evaluation of the actor
// from the artifact's tensors: tanh MLP, then a softmax per dimension.
func referenceProbs(p *policy.Policy, obs []float64) []float64 {
	w := map[string][]float32{}
	shape := map[string][]int{}
	for _, t := range p.Tensors() {
		v, err := t.Float32s()
		if err != nil {
			panic(err)
		}
		w[t.Name], shape[t.Name] = v, t.Shape
	}
	x := obs
	for l := 0; ; l += 2 {
		wn := "actor." + string(rune('0'+l)) + ".weight"
		W, ok := w[wn]
		if !ok {
			break
		}
		out, in := shape[wn][0], shape[wn][1]
		b := w["actor."+string(rune('0'+l))+".bias"]
		y := make([]float64, out)
		for o := range out {
			s := float64(b[o])
			for i := range in {
				s += float64(W[o*in+i]) * float64(float32(x[i]))
			}
			y[o] = s
		}
		if _, last := w["actor."+string(rune('0'+l+2))+".weight"]; last {
			for i := range y {
				y[i] = math.Tanh(y[i])
			}
		}
		x = y
	}
	off := 0
	for _, k := range p.Nvec() {
		m := slices.Max(x[off : off+k])
		sum := 0.0
		for j := off; j < off+k; j++ {
			x[j] = math.Exp(x[j] - m)
			sum += x[j]
		}
		for j := off; j < off+k; j++ {
			x[j] /= sum
		}
		off += k
	}
	return x
}

func TestProbabilities(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	p, card := readPolicy(t, dir, "pred")
	for i, o := range testObservations(t, "pred", card.Spaces, 8) {
		w := do(s, "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": toWire(o), "probabilities": true}))
		okStatus(t, w)
		got := decodeJSON[wireResult](t, w)
		ref := referenceProbs(p, o.Flatten(nil))
		off := 0
		for d, q := range got.Probabilities {
			sum := 0.0
			for j, v := range q {
				sum += v
				if math.Abs(v-ref[off+j]) > 1e-5 {
					t.Fatalf("obs %d dim %d choice %d: %v, reference %v", i, d, j, v, ref[off+j])
				}
				if v > q[got.Action[d]] {
					t.Fatalf("obs %d dim %d: argmax action %d has p %v < %v", i, d, got.Action[d], q[got.Action[d]], v)
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Fatalf("obs %d dim %d: probabilities sum to %v", i, d, sum)
			}
			off += len(q)
		}
		if len(got.Probabilities) != len(p.Nvec()) {
			t.Fatalf("%d dimensions, want %d", len(got.Probabilities), len(p.Nvec()))
		}
	}
}

// writeNormalized writes a pred fixture policy that carries VecNormalize
// observation statistics (mean and variance far from 0 and 1, so that
// normalising matters) as <dir>/<name>.
func writeNormalized(t *testing.T, dir, name string) {
	t.Helper()
	card, err := fixture.Write(dir, name, "pred", 64, 9)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := readPolicy(t, dir, name)
	rng := rand.New(rand.NewPCG(9, 9))
	n := &policy.Normalization{NormObs: true, NormReward: true, ClipObs: 10, ClipReward: 10, Epsilon: 1e-8, Gamma: 0.995, ObsCount: 1e5, RetVar: 9, RetCount: 1e5}
	for range p.ObsSize() {
		n.ObsMean = append(n.ObsMean, rng.NormFloat64()*100)
		n.ObsVar = append(n.ObsVar, rng.Float64()*50)
	}
	if err := p.SetNormalization(n); err != nil {
		t.Fatal(err)
	}
	var wb bytes.Buffer
	sha, err := p.WriteSafetensors(&wb)
	if err != nil {
		t.Fatal(err)
	}
	card.WeightsSHA256, card.Normalization, card.Tensors = sha, p.Normalization(), nil
	for _, ts := range p.Tensors() {
		card.Tensors = append(card.Tensors, ts.Name)
	}
	slices.Sort(card.Tensors)
	d := filepath.Join(dir, name)
	if err := os.WriteFile(filepath.Join(d, policy.FileName+".safetensors"), wb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, policy.FileName+".json"), mustJSON(t, card), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestActMatchesPolicyNormalized: for a policy with observation
// statistics, serve's answer on a raw observation equals in-process Act
// (deterministic, through the combiner, and sampled, like a Controller),
// and the statistics change the answer.
func TestActMatchesPolicyNormalized(t *testing.T) {
	dir := t.TempDir()
	writeNormalized(t, dir, "pred")
	s := newTestServer(t, dir, "")
	p, card := readPolicy(t, dir, "pred")
	if card.Normalization == nil || p.Normalization() == nil {
		t.Fatal("fixture lost its statistics")
	}
	plain := p.Clone()
	if err := plain.SetNormalization(nil); err != nil {
		t.Fatal(err)
	}
	differs := false
	for i, o := range testObservations(t, "pred", card.Spaces, 12) {
		want := make([]int, len(p.Nvec()))
		v, err := p.Act(o.Flatten(nil), true, nil, want)
		if err != nil {
			t.Fatal(err)
		}
		w := do(s, "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": toWire(o)}))
		okStatus(t, w)
		got := decodeJSON[wireResult](t, w)
		if !slices.Equal(got.Action, want) || math.Float64bits(got.Value) != math.Float64bits(v) {
			t.Fatalf("obs %d: got %v %v, want %v %v", i, got.Action, got.Value, want, v)
		}
		if pv, _ := plain.Act(o.Flatten(nil), true, nil, make([]int, len(want))); pv != v {
			differs = true
		}

		seed := uint64(2000 + i)
		c, err := policy.NewController(p, card.Spaces)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeterministic(false)
		c.Reset(seed)
		ca, err := c.Act(o)
		if err != nil {
			t.Fatal(err)
		}
		w = do(s, "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": toWire(o), "sample": true, "seed": seed}))
		okStatus(t, w)
		if got := decodeJSON[wireResult](t, w); !slices.Equal(got.Action, ca.Choices) || math.Float64bits(got.Value) != math.Float64bits(c.Value()) {
			t.Fatalf("obs %d seed %d: sampled %v %v, controller %v %v", i, seed, got.Action, got.Value, ca.Choices, c.Value())
		}
	}
	if !differs {
		t.Error("the statistics never changed the value: the test cannot tell")
	}
}

// TestActTargetUtilization: a policy trained with a target-utilization
// action set (its card's Spaces.TargetUtilization) is served, its answers
// name each task's chosen utilization in place of deltas, and the policy
// list reports the set.
func TestActTargetUtilization(t *testing.T) {
	dir := t.TempDir()
	card, err := fixture.Write(dir, "pred", "pred", 64, 9)
	if err != nil {
		t.Fatal(err)
	}
	set := []float64{0, 0.9, 0.7, 0.5, 0.3}
	card.Spaces.DeltaMillicores, card.Spaces.TargetUtilization = nil, set
	if err := os.WriteFile(filepath.Join(dir, "pred", policy.FileName+".json"), mustJSON(t, card), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, dir, "")
	o, err := fixture.Observation("pred")
	if err != nil {
		t.Fatal(err)
	}
	w := do(s, "POST", "/v1/policies/pred/act", mustJSON(t, map[string]any{"observation": toWire(o)}))
	okStatus(t, w)
	got := decodeJSON[struct {
		Action            []int     `json:"action"`
		TargetUtilization []float64 `json:"target_utilization"`
		Value             float64   `json:"value"`
		Version           string    `json:"version"`
	}](t, w)
	if len(got.Action) != 6 || len(got.TargetUtilization) != 6 {
		t.Fatalf("answer %+v: want 6 actions and 6 utilizations", got)
	}
	for d, a := range got.Action {
		if got.TargetUtilization[d] != set[a] {
			t.Fatalf("task %d: choice %d answered utilization %v, want %v", d, a, got.TargetUtilization[d], set[a])
		}
	}
	l := do(s, "GET", "/v1/policies", nil)
	okStatus(t, l)
	if !bytes.Contains(l.Body.Bytes(), []byte(`"target_utilization":[0,0.9,0.7,0.5,0.3]`)) {
		t.Fatalf("policy list does not report the set: %s", l.Body)
	}
	if bytes.Contains(l.Body.Bytes(), []byte(`"delta_millicores"`)) {
		t.Fatalf("policy list reports deltas for a target-utilization policy (a client checking its deltas refuses it): %s", l.Body)
	}
}
