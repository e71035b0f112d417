package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
	"testing/fstest"

	"streamscale/env"
	"streamscale/ppo/internal/nn"
)

func testSpaces() env.Spaces {
	box := func(n int) env.Box {
		b := env.Box{Shape: []int{n}, Low: make([]float64, n), High: make([]float64, n)}
		for i := range b.High {
			b.High[i] = 1
		}
		return b
	}
	return env.Spaces{
		Keys:            []string{"app", "server", "task"},
		Observation:     map[string]env.Box{"app": box(2), "server": box(3), "task": box(4)},
		Nvec:            []int{5, 5},
		DeltaMillicores: []float64{-500, -50, 0, 50, 500},
	}
}

func testPolicy(t *testing.T) *Policy {
	a, err := nn.NewArch(9, []int{8, 8}, []int{5, 5})
	if err != nil {
		t.Fatal(err)
	}
	return newPolicy(a, randomTheta(a, 4))
}

func TestPolicyArtifactRoundTrip(t *testing.T) {
	p := testPolicy(t)
	var w bytes.Buffer
	sha, err := p.WriteSafetensors(&w)
	if err != nil {
		t.Fatal(err)
	}
	card := Card{Format: CardFormat, Hyperparameters: json.RawMessage(`{"net_arch":[8,8],"seed":4}`), Seed: 4, WeightsSHA256: sha, Spaces: testSpaces()}
	for _, ts := range p.Tensors() {
		card.Tensors = append(card.Tensors, ts.Name)
	}
	slices.Sort(card.Tensors)
	cb, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"p.safetensors": {Data: w.Bytes()}, "p.json": {Data: cb}}
	q, got, err := Read(fsys, "p")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(p.theta, q.theta, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) || got.WeightsSHA256 != sha || len(got.Tensors) != 12 || got.Tensors[0] != "actor.0.bias" {
		t.Fatalf("round trip changed the policy or card: %+v", got)
	}
	// PyTorch layout: actor.0.weight is [8, 9].
	for _, ts := range p.Tensors() {
		if ts.Name == "actor.0.weight" && (ts.Shape[0] != 8 || ts.Shape[1] != 9) {
			t.Errorf("actor.0.weight shape %v", ts.Shape)
		}
	}

	// Tampered weights, a wrong layout and a bad format are refused.
	bad := append([]byte(nil), w.Bytes()...)
	bad[len(bad)-1] ^= 0x40
	if _, err := Load(bad, &card); !errors.Is(err, ErrMismatch) {
		t.Errorf("tampered weights: %v", err)
	}
	other := card
	other.Spaces = testSpaces()
	other.Spaces.Observation["task"] = env.Box{Shape: []int{5}, Low: make([]float64, 5), High: make([]float64, 5)}
	if _, err := Load(w.Bytes(), &other); !errors.Is(err, ErrMismatch) {
		t.Errorf("wrong layout: %v", err)
	}
	other = card
	other.Hyperparameters = json.RawMessage(`{"net_arch":[8]}`)
	if _, err := Load(w.Bytes(), &other); !errors.Is(err, ErrMismatch) {
		t.Errorf("wrong net_arch: %v", err)
	}
	other.Hyperparameters = json.RawMessage(`{"seed":4}`)
	if _, err := Load(w.Bytes(), &other); !errors.Is(err, ErrMismatch) {
		t.Errorf("missing net_arch: %v", err)
	}
}

// TestSplitArchArtifactRoundTrip: a policy whose critic has its own
// widths (critic_arch) is saved and loaded with both, and its card is
// refused without critic_arch.
func TestSplitArchArtifactRoundTrip(t *testing.T) {
	a, err := nn.NewSplitArch(9, []int{8, 8}, []int{16, 4, 3}, []int{5, 5})
	if err != nil {
		t.Fatal(err)
	}
	p := newPolicy(a, randomTheta(a, 4))
	var w bytes.Buffer
	sha, err := p.WriteSafetensors(&w)
	if err != nil {
		t.Fatal(err)
	}
	card := Card{Format: CardFormat, Hyperparameters: json.RawMessage(`{"net_arch":[8,8],"critic_arch":[16,4,3]}`), WeightsSHA256: sha, Spaces: testSpaces()}
	q, err := Load(w.Bytes(), &card)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.Hidden(), []int{8, 8}) || !slices.Equal(q.CriticHidden(), []int{16, 4, 3}) || !slices.Equal(p.theta, q.theta) {
		t.Fatalf("loaded arch %v / %v", q.Hidden(), q.CriticHidden())
	}
	obs := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	var vp, vq [1]float64
	if err := p.Values(obs, vp[:]); err != nil {
		t.Fatal(err)
	}
	if err := q.Values(obs, vq[:]); err != nil || vp != vq {
		t.Fatalf("values %v and %v (%v)", vp, vq, err)
	}
	for _, hp := range []string{`{"net_arch":[8,8]}`, `{"net_arch":[8,8],"critic_arch":[]}`, `{"net_arch":[8,8],"critic_arch":[16,4]}`} {
		other := card
		other.Hyperparameters = json.RawMessage(hp)
		if _, err := Load(w.Bytes(), &other); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: %v", hp, err)
		}
	}
}

func TestControllerFlattensInKeyOrder(t *testing.T) {
	p := testPolicy(t)
	c, err := NewController(p, testSpaces())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reset(1); err != nil {
		t.Fatal(err)
	}
	obs := env.Observation{App: []float64{0.1, 0.2}, Server: []float64{0.3, 0.4, 0.5}, Task: []float64{0.6, 0.7, 0.8, 0.9}}
	act, err := c.Act(obs)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, 2)
	if _, err := p.Act(obs.Flatten(nil), true, nil, want); err != nil {
		t.Fatal(err)
	}
	if len(act.Choices) != 2 || act.Choices[0] != want[0] || act.Choices[1] != want[1] || act.Targets != nil {
		t.Errorf("controller %v, policy %v", act, want)
	}
	obs.Task = obs.Task[:3]
	if _, err := c.Act(obs); err == nil {
		t.Error("short task observation accepted")
	}
	if _, err := NewController(p, wrongSpaces()); !errors.Is(err, ErrMismatch) {
		t.Errorf("mismatched spaces: %v", err)
	}
}

// wrongSpaces is a layout of the wrong size for testPolicy.
func wrongSpaces() env.Spaces {
	return env.Spaces{Keys: []string{"app"}, Observation: map[string]env.Box{"app": {Shape: []int{4}, Low: make([]float64, 4), High: make([]float64, 4)}}, Nvec: []int{2}}
}
