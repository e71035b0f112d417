package ppo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"streamscale/env"
	"streamscale/ppo/safetensors"
)

// CardFormat identifies the policy sidecar's schema.
const CardFormat = "streamscale-ppo-policy/1"

// A saved policy is two files: <name>.safetensors with the weights and
// <name>.json with its Card. Tensors use PyTorch's names and layout, one
// nn.Sequential per net (Linear at even indices, Tanh between):
//
//	actor.0.weight  [h1, obs]    actor.0.bias  [h1]
//	actor.2.weight  [h2, h1]     actor.2.bias  [h2]
//	actor.4.weight  [Σnvec, h2]  actor.4.bias  [Σnvec]
//	critic.0.weight [h1, obs]    critic.0.bias [h1]
//	critic.2.weight [h2, h1]     critic.2.bias [h2]
//	critic.4.weight [1, h2]      critic.4.bias [1]
//
// all F32 (with other net_arch the indices continue 0, 2, 4, …).

// Card is the JSON sidecar of a saved policy.
type Card struct {
	Format        string     `json:"format"`          // CardFormat
	Name          string     `json:"name"`            // run or policy name
	Env           string     `json:"env"`             // environment family, e.g. "streamscale", "cartpole"
	Profile       string     `json:"profile"`         // workload profile, if any
	Spaces        env.Spaces `json:"spaces"`          // observation layout (keys in flattening order, shapes, bounds), action nvec and deltas
	Config        Config     `json:"hyperparameters"` // training configuration
	Seed          uint64     `json:"seed"`            // root seed
	Transitions   int        `json:"transitions"`     // env steps trained on
	GradientSteps int        `json:"gradient_steps"`  // Adam steps
	BestDevReward *float64   `json:"best_dev_reward"` // mean dev-episode reward of this policy, null if not evaluated
	ConfigHash    string     `json:"config_hash"`     // Config.Hash of the training configuration
	Commit        string     `json:"commit"`          // source commit, or "unknown"
	GoVersion     string     `json:"go_version"`      // toolchain that trained it
	WeightsSHA256 string     `json:"weights_sha256"`  // hex SHA-256 of the .safetensors file
	Tensors       []string   `json:"tensors"`         // tensor names, in file order
}

// Tensors returns the policy's weights as PyTorch-layout F32 tensors.
func (p *Policy) Tensors() []safetensors.Tensor {
	var ts []safetensors.Tensor
	for _, q := range p.arch.params {
		v := p.theta[q.off : q.off+q.size()]
		if q.bias {
			ts = append(ts, safetensors.F32(q.name, []int{q.cols}, v))
			continue
		}
		t := make([]float32, len(v)) // [in, out] → [out, in]
		for i := range q.rows {
			for o := range q.cols {
				t[o*q.rows+i] = v[i*q.cols+o]
			}
		}
		ts = append(ts, safetensors.F32(q.name, []int{q.cols, q.rows}, t))
	}
	return ts
}

// WriteSafetensors writes the weights to w and returns the hex SHA-256 of
// the bytes written (for Card.WeightsSHA256).
func (p *Policy) WriteSafetensors(w io.Writer) (string, error) {
	h := sha256.New()
	if err := safetensors.Encode(io.MultiWriter(w, h), p.Tensors(), map[string]string{"format": "pt"}); err != nil {
		return "", fmt.Errorf("ppo: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrPolicyMismatch is returned (wrapped) when weights do not match their
// card: wrong hash, missing or misshapen tensors, or a layout the card
// does not describe.
var ErrPolicyMismatch = errors.New("ppo: policy does not match its card")

// LoadPolicy checks weights against card (SHA-256, observation layout,
// tensor names and shapes) and returns the policy.
func LoadPolicy(weights []byte, card *Card) (*Policy, error) {
	if card.Format != CardFormat {
		return nil, fmt.Errorf("ppo: policy card format %q, want %q", card.Format, CardFormat)
	}
	sum := sha256.Sum256(weights)
	if got := hex.EncodeToString(sum[:]); got != card.WeightsSHA256 {
		return nil, fmt.Errorf("%w: weights sha256 %.12s, card records %.12s", ErrPolicyMismatch, got, card.WeightsSHA256)
	}
	obs, err := flatSize(card.Spaces)
	if err != nil {
		return nil, err
	}
	a, err := newArch(obs, card.Config.Hidden, card.Spaces.Nvec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPolicyMismatch, err)
	}
	ts, _, err := safetensors.Decode(weights)
	if err != nil {
		return nil, fmt.Errorf("ppo: %w", err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, t := range ts {
		byName[t.Name] = t
	}
	if len(byName) != len(a.params) {
		return nil, fmt.Errorf("%w: file has %d tensors, layout needs %d", ErrPolicyMismatch, len(byName), len(a.params))
	}
	theta := make([]float32, a.size)
	for _, q := range a.params {
		t, ok := byName[q.name]
		if !ok {
			return nil, fmt.Errorf("%w: tensor %s is missing", ErrPolicyMismatch, q.name)
		}
		want := []int{q.cols, q.rows}
		if q.bias {
			want = []int{q.cols}
		}
		if !slices.Equal(t.Shape, want) {
			return nil, fmt.Errorf("%w: tensor %s has shape %v, want %v", ErrPolicyMismatch, q.name, t.Shape, want)
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPolicyMismatch, err)
		}
		dst := theta[q.off : q.off+q.size()]
		if q.bias {
			copy(dst, v)
			continue
		}
		for o := range q.cols {
			for i := range q.rows {
				dst[i*q.cols+o] = v[o*q.rows+i]
			}
		}
	}
	return newPolicy(a, theta), nil
}

// flatSize checks a card's observation layout and returns its flat size.
func flatSize(s env.Spaces) (int, error) {
	if len(s.Keys) == 0 {
		return 0, fmt.Errorf("%w: observation layout has no keys", ErrPolicyMismatch)
	}
	n := 0
	for _, k := range s.Keys {
		b, ok := s.Observation[k]
		if !ok {
			return 0, fmt.Errorf("%w: observation key %q has no box", ErrPolicyMismatch, k)
		}
		if len(b.Low) != b.Size() || len(b.High) != b.Size() {
			return 0, fmt.Errorf("%w: observation %q bounds have %d/%d entries, want %d", ErrPolicyMismatch, k, len(b.Low), len(b.High), b.Size())
		}
		n += b.Size()
	}
	return n, nil
}

// ReadPolicy reads <name>.safetensors and <name>.json from fsys and loads
// them with LoadPolicy.
func ReadPolicy(fsys fs.FS, name string) (*Policy, *Card, error) {
	cb, err := fs.ReadFile(fsys, name+".json")
	if err != nil {
		return nil, nil, fmt.Errorf("ppo: %w", err)
	}
	var card Card
	dec := json.NewDecoder(bytes.NewReader(cb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&card); err != nil {
		return nil, nil, fmt.Errorf("ppo: policy card %s.json: %w", name, err)
	}
	wb, err := fs.ReadFile(fsys, name+".safetensors")
	if err != nil {
		return nil, nil, fmt.Errorf("ppo: %w", err)
	}
	p, err := LoadPolicy(wb, &card)
	if err != nil {
		return nil, nil, err
	}
	return p, &card, nil
}

// NewCard fills the parts of a Card that the policy and config determine;
// the caller sets Name, Env, Profile, Spaces, Transitions, GradientSteps,
// BestDevReward, Commit and GoVersion.
func NewCard(p *Policy, cfg Config, weightsSHA256 string) Card {
	c := Card{Format: CardFormat, Config: cfg, Seed: cfg.Seed, ConfigHash: cfg.Hash(), WeightsSHA256: weightsSHA256}
	for _, t := range p.Tensors() {
		c.Tensors = append(c.Tensors, t.Name)
	}
	slices.Sort(c.Tensors)
	return c
}
