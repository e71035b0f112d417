package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/fstest"
)

func testNormalization() *Normalization {
	n := &Normalization{NormObs: true, NormReward: true, ClipObs: 2, ClipReward: 10, Epsilon: 1e-8, Gamma: 0.99, ObsCount: 100.0001, RetVar: 4, RetCount: 50.0001}
	for i := range 9 {
		n.ObsMean = append(n.ObsMean, 0.1*float64(i))
		n.ObsVar = append(n.ObsVar, 0.01*float64(i)) // variance 0 for element 0
	}
	return n
}

// TestNormalizeObsByHand: x̂ = clip((x − μ)/√(σ² + ε), ±clip), rounded to
// float32, and a policy with statistics acts on a raw observation as a
// policy without them acts on the normalised one.
func TestNormalizeObsByHand(t *testing.T) {
	p := testPolicy(t)
	raw := testPolicy(t)
	if err := p.SetNormalization(testNormalization()); err != nil {
		t.Fatal(err)
	}
	obs := []float64{0, 1, 0.3, 0.25, 5, -3, 0.6, 0.7, 0.8}
	got := make([]float32, 9)
	p.NormalizeObs(got, obs)
	n := testNormalization()
	norm := make([]float64, 9)
	for i, x := range obs {
		v := (x - n.ObsMean[i]) / math.Sqrt(n.ObsVar[i]+n.Epsilon)
		v = math.Max(-2, math.Min(2, v))
		if got[i] != float32(v) {
			t.Errorf("element %d: %v, want %v", i, got[i], float32(v))
		}
		norm[i] = float64(float32(v))
	}
	if got[1] != 2 || got[4] != 2 || got[5] != -2 {
		t.Errorf("not clipped: %v", got)
	}
	a, b := make([]int, 2), make([]int, 2)
	va, err := p.Act(obs, true, nil, a)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := raw.Act(norm, true, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if va != vb || !slices.Equal(a, b) {
		t.Errorf("normalising policy %v %v, raw policy on normalised input %v %v", a, va, b, vb)
	}
	// Clone keeps its own copy; removing statistics restores the raw policy.
	c := p.Clone()
	if err := p.SetNormalization(nil); err != nil {
		t.Fatal(err)
	}
	if vc, _ := c.Act(obs, true, nil, a); vc != va {
		t.Error("clone lost its statistics")
	}
	if vp, _ := p.Act(norm, true, nil, a); vp != vb {
		t.Error("policy without statistics differs from the raw one")
	}
	bad := testNormalization()
	bad.ObsVar = bad.ObsVar[:3]
	if err := p.SetNormalization(bad); err == nil {
		t.Error("short statistics accepted")
	}
}

// TestNormalizedArtifactRoundTrip: the statistics travel as F64 tensors
// obs_rms.mean/var plus the card's normalization record, and the loaded
// policy answers bit for bit as the saved one on raw observations.
func TestNormalizedArtifactRoundTrip(t *testing.T) {
	p := testPolicy(t)
	if err := p.SetNormalization(testNormalization()); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	sha, err := p.WriteSafetensors(&w)
	if err != nil {
		t.Fatal(err)
	}
	card := Card{Format: CardFormat, Hyperparameters: json.RawMessage(`{"net_arch":[8,8]}`), WeightsSHA256: sha, Spaces: testSpaces(), Normalization: p.Normalization()}
	for _, ts := range p.Tensors() {
		card.Tensors = append(card.Tensors, ts.Name)
	}
	cb, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	q, got, err := Read(fstest.MapFS{"p.safetensors": {Data: w.Bytes()}, "p.json": {Data: cb}}, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tensors) != 14 || got.Normalization.RewardScale() != math.Sqrt(4+1e-8) {
		t.Fatalf("card %+v", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	obs := make([]float64, 5*9)
	for i := range obs {
		obs[i] = rng.NormFloat64() * 3
	}
	ap, aq := make([]int, 10), make([]int, 10)
	vp, vq, lp, lq := make([]float64, 5), make([]float64, 5), make([]float64, 5), make([]float64, 5)
	if err := p.Step(obs, true, nil, ap, vp, lp); err != nil {
		t.Fatal(err)
	}
	if err := q.Step(obs, true, nil, aq, vq, lq); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ap, aq) || !slices.Equal(vp, vq) || !slices.Equal(lp, lq) {
		t.Error("loaded policy differs from the saved one")
	}
	// A card that claims statistics the file lacks is refused, and so is a
	// file with statistics under a card without them.
	var plain bytes.Buffer
	if _, err := testPolicy(t).WriteSafetensors(&plain); err != nil {
		t.Fatal(err)
	}
	other := card
	other.WeightsSHA256 = sha256Hex(plain.Bytes())
	if _, err := Load(plain.Bytes(), &other); !errors.Is(err, ErrMismatch) {
		t.Errorf("missing statistics: %v", err)
	}
	other = card
	other.Normalization = nil
	if _, err := Load(w.Bytes(), &other); !errors.Is(err, ErrMismatch) {
		t.Errorf("unexpected statistics: %v", err)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
