package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"testing/fstest"

	"streamscale/agents"
	"streamscale/agents/controllertest"
	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/ppo/internal/nn"
)

const tunedRule = "threshold:measured:target=0.7:tol=0.1:window=10"

// residualArtifact builds a random residual policy for sc whose follow
// logits carry the bias follow, and returns it as Read's files.
func residualArtifact(t *testing.T, sc env.Config, follow float32) fstest.MapFS {
	t.Helper()
	rule, err := rulespec.Parse(tunedRule)
	if err != nil {
		t.Fatal(err)
	}
	n := len(sc.App.Tasks)
	info := residual.NewInfo(rule, sc, residual.NoContext)
	nvec := make([]int, n)
	for k := range nvec {
		nvec[k] = len(residual.Choices)
	}
	a, err := nn.NewSplitArch(sc.Spaces().FlatSize()+info.Features, []int{8, 8}, []int{8, 8}, nvec)
	if err != nil {
		t.Fatal(err)
	}
	p := newPolicy(a, randomTheta(a, 7))
	bias := param(t, p, "actor.4.bias")
	for k := range n {
		bias[5*k] = follow
	}
	var w bytes.Buffer
	sha, err := p.WriteSafetensors(&w)
	if err != nil {
		t.Fatal(err)
	}
	card := Card{Format: CardFormat, Hyperparameters: json.RawMessage(`{"net_arch":[8,8]}`), WeightsSHA256: sha, Spaces: sc.Spaces(), Residual: &info}
	for _, ts := range p.Tensors() {
		card.Tensors = append(card.Tensors, ts.Name)
	}
	slices.Sort(card.Tensors)
	cb, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	return fstest.MapFS{FileName + ".json": {Data: cb}, FileName + ".safetensors": {Data: w.Bytes()}}
}

func targets(t *testing.T, sc env.Config, c agents.Controller) []float64 {
	t.Helper()
	e, err := env.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	err = agents.RunEpisode(t.Context(), e, agents.Vertical(recordTargets{c, &out}), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type recordTargets struct {
	agents.Controller
	out *[]float64
}

func (r recordTargets) Act(o env.Observation) (env.Action, error) {
	a, err := r.Controller.Act(o)
	*r.out = append(*r.out, a.Targets...)
	return a, err
}

// TestResidualPolicy: a residual policy read from its files runs over
// its base rule; one whose follow logits dominate is the rule, target for
// target; one that does not deviates; a plain controller refuses it; a
// card whose feature count does not match is refused at load.
func TestResidualPolicy(t *testing.T) {
	sc, err := controllertest.Config("pred")
	if err != nil {
		t.Fatal(err)
	}
	rule, _ := rulespec.Parse(tunedRule)
	base, err := rule.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	want := targets(t, sc, base)
	for _, tc := range []struct {
		follow float32
		isRule bool
	}{{40, true}, {-40, false}} {
		p, card, err := Read(residualArtifact(t, sc, tc.follow), FileName)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewResidualController(p, card.Residual, sc, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := targets(t, sc, c); slices.Equal(got, want) != tc.isRule {
			t.Errorf("follow bias %v: the targets equal the rule's: %v, want %v", tc.follow, !tc.isRule, tc.isRule)
		}
		if _, err := NewController(p, sc.Spaces()); !errors.Is(err, ErrMismatch) {
			t.Errorf("a plain controller over a residual policy: %v, want ErrMismatch", err)
		}
		if _, err := NewResidualController(p, nil, sc, true); err == nil {
			t.Error("a residual controller without the card's record was built")
		}
	}
	files := residualArtifact(t, sc, 40)
	var card map[string]any
	if err := json.Unmarshal(files[FileName+".json"].Data, &card); err != nil {
		t.Fatal(err)
	}
	card["residual"].(map[string]any)["features"] = 11
	files[FileName+".json"].Data, _ = json.Marshal(card)
	if _, _, err := Read(files, FileName); !errors.Is(err, ErrMismatch) {
		t.Errorf("a card with 11 residual features for 6 tasks: %v, want ErrMismatch", err)
	}
}
