package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"

	"streamscale/agents/residual"
	"streamscale/env"
	"streamscale/internal/command"
	"streamscale/ppo/internal/nn"
	"streamscale/ppo/safetensors"
)

// CardFormat identifies the policy sidecar's schema.
const CardFormat = "streamscale-ppo-policy/1"

// FileName is the base name of a saved policy in its directory:
// <dir>/policy.safetensors and <dir>/policy.json. Every command that
// writes or reads the artifact uses it.
const FileName = "policy"

// A saved policy is two files: <name>.safetensors with the weights and
// <name>.json with its Card (name is FileName for the artifact). Tensors use PyTorch's names and layout, one
// nn.Sequential per net (Linear at even indices, Tanh between):
//
//	actor.0.weight  [h1, obs]    actor.0.bias  [h1]
//	actor.2.weight  [h2, h1]     actor.2.bias  [h2]
//	actor.4.weight  [Σnvec, h2]  actor.4.bias  [Σnvec]
//	critic.0.weight [h1, obs]    critic.0.bias [h1]
//	critic.2.weight [h2, h1]     critic.2.bias [h2]
//	critic.4.weight [1, h2]      critic.4.bias [1]
//
// all F32 (with other net_arch the indices continue 0, 2, 4, …). A policy
// trained with observation normalisation (Card.Normalization.NormObs) also
// has the F64 tensors obs_rms.mean [obs] and obs_rms.var [obs].

// Card is the JSON sidecar of a saved policy.
type Card struct {
	Format  string `json:"format"`  // CardFormat
	Name    string `json:"name"`    // run or policy name
	Env     string `json:"env"`     // environment family, e.g. "streamscale", "cartpole"
	Profile string `json:"profile"` // workload profile, if any
	// Scenario is the simulator physics preset the policy was trained on
	// (env.Scenarios), if any; absent from cards written before presets.
	Scenario string     `json:"scenario,omitempty"`
	Spaces   env.Spaces `json:"spaces"` // observation layout (keys in flattening order, shapes, bounds), action nvec and deltas
	// Hyperparameters is the training configuration as the trainer
	// encoded it (ppo.Config: SB3's names, net_arch among them); the
	// policy reads only net_arch (NetArch), the rest is a record.
	Hyperparameters json.RawMessage `json:"hyperparameters"`
	Seed            uint64          `json:"seed"`            // root seed
	Transitions     int             `json:"transitions"`     // env steps trained on
	GradientSteps   int             `json:"gradient_steps"`  // Adam steps
	BestDevReward   *float64        `json:"best_dev_reward"` // mean dev-episode reward of this policy, null if not evaluated
	ConfigHash      string          `json:"config_hash"`     // ppo.Config.Hash of the training configuration
	command.Build                   // commit (source commit, or "unknown"), go_version (toolchain that trained it)
	WeightsSHA256   string          `json:"weights_sha256"` // hex SHA-256 of the .safetensors file
	Tensors         []string        `json:"tensors"`        // tensor names, in file order
	// Normalization is the VecNormalize state the policy applies (norm_obs,
	// clip_obs, epsilon, …; the observation statistics are tensors);
	// absent from cards of policies trained without it.
	Normalization *Normalization `json:"normalization,omitempty"`
	// Recipe is the training command's record of how it was asked to
	// train (the train command's resolved recipe and recipe file); not
	// read here; absent from older cards.
	Recipe json.RawMessage `json:"recipe,omitempty"`
	// Residual, for a residual policy (agents/residual), names its base
	// rule and choices; the policy's observation is the flattened Dict
	// observation followed by Residual.Features values. Absent for a
	// policy whose choices are the action space's.
	Residual *residual.Info `json:"residual,omitempty"`
}

// NetArch returns the hidden layer widths recorded in the card's
// hyperparameters (net_arch).
func (c *Card) NetArch() ([]int, error) {
	var h struct {
		Hidden []int `json:"net_arch"`
	}
	if err := json.Unmarshal(c.Hyperparameters, &h); err != nil {
		return nil, fmt.Errorf("%w: hyperparameters: %v", ErrMismatch, err)
	}
	if len(h.Hidden) == 0 {
		return nil, fmt.Errorf("%w: hyperparameters record no net_arch", ErrMismatch)
	}
	return h.Hidden, nil
}

// CriticArch returns the critic's hidden layer widths recorded in the
// card's hyperparameters: critic_arch, or net_arch when absent (one
// architecture for both nets).
func (c *Card) CriticArch() ([]int, error) {
	var h struct {
		Critic []int `json:"critic_arch"`
	}
	if err := json.Unmarshal(c.Hyperparameters, &h); err != nil {
		return nil, fmt.Errorf("%w: hyperparameters: %v", ErrMismatch, err)
	}
	if h.Critic == nil {
		return c.NetArch()
	}
	if len(h.Critic) == 0 {
		return nil, fmt.Errorf("%w: hyperparameters record an empty critic_arch", ErrMismatch)
	}
	return h.Critic, nil
}

// Tensors returns the policy's weights as PyTorch-layout F32 tensors.
func (p *Policy) Tensors() []safetensors.Tensor {
	var ts []safetensors.Tensor
	for _, q := range p.arch.Params {
		v := p.theta[q.Off : q.Off+q.Len()]
		if q.Bias {
			ts = append(ts, safetensors.F32(q.Name, []int{q.Cols}, v))
			continue
		}
		t := make([]float32, len(v)) // [in, out] → [out, in]
		for i := range q.Rows {
			for o := range q.Cols {
				t[o*q.Rows+i] = v[i*q.Cols+o]
			}
		}
		ts = append(ts, safetensors.F32(q.Name, []int{q.Cols, q.Rows}, t))
	}
	if p.norm != nil && p.norm.NormObs {
		ts = append(ts,
			safetensors.F64(ObsMeanTensor, []int{p.arch.Obs}, p.norm.ObsMean),
			safetensors.F64(ObsVarTensor, []int{p.arch.Obs}, p.norm.ObsVar))
	}
	return ts
}

// WriteSafetensors writes the weights to w and returns the hex SHA-256 of
// the bytes written (for Card.WeightsSHA256).
func (p *Policy) WriteSafetensors(w io.Writer) (string, error) {
	h := sha256.New()
	if err := safetensors.Encode(io.MultiWriter(w, h), p.Tensors(), map[string]string{"format": "pt"}); err != nil {
		return "", fmt.Errorf("policy: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrMismatch is returned (wrapped) when weights do not match their
// card: wrong hash, missing or misshapen tensors, or a layout the card
// does not describe.
var ErrMismatch = errors.New("policy: weights do not match their card")

// Load checks weights against card (SHA-256, observation layout, tensor
// names and shapes) and returns the policy.
func Load(weights []byte, card *Card) (*Policy, error) {
	if card.Format != CardFormat {
		return nil, fmt.Errorf("policy: policy card format %q, want %q", card.Format, CardFormat)
	}
	sum := sha256.Sum256(weights)
	if got := hex.EncodeToString(sum[:]); got != card.WeightsSHA256 {
		return nil, fmt.Errorf("%w: weights sha256 %.12s, card records %.12s", ErrMismatch, got, card.WeightsSHA256)
	}
	obs, err := flatSize(card.Spaces)
	if err != nil {
		return nil, err
	}
	if r := card.Residual; r != nil {
		n := 0
		if t, ok := card.Spaces.Observation["task"]; ok && len(t.Shape) > 0 {
			n = t.Shape[0]
		}
		if err := r.Check(n); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMismatch, err)
		}
		obs += r.Features
	}
	hidden, err := card.NetArch()
	if err != nil {
		return nil, err
	}
	critic, err := card.CriticArch()
	if err != nil {
		return nil, err
	}
	a, err := nn.NewSplitArch(obs, hidden, critic, card.Spaces.Nvec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMismatch, err)
	}
	ts, _, err := safetensors.Decode(weights)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, t := range ts {
		byName[t.Name] = t
	}
	want := len(a.Params)
	norm := card.Normalization.clone()
	if norm != nil && norm.NormObs {
		want += 2
		for _, st := range []struct {
			name string
			dst  *[]float64
		}{{ObsMeanTensor, &norm.ObsMean}, {ObsVarTensor, &norm.ObsVar}} {
			t, ok := byName[st.name]
			if !ok {
				return nil, fmt.Errorf("%w: tensor %s is missing", ErrMismatch, st.name)
			}
			if !slices.Equal(t.Shape, []int{obs}) {
				return nil, fmt.Errorf("%w: tensor %s has shape %v, want [%d]", ErrMismatch, st.name, t.Shape, obs)
			}
			if *st.dst, err = t.Float64s(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrMismatch, err)
			}
			for i, x := range *st.dst {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("%w: tensor %s value %d is %v", ErrNonFinite, st.name, i, x)
				}
			}
		}
	}
	if len(byName) != want {
		return nil, fmt.Errorf("%w: file has %d tensors, layout needs %d", ErrMismatch, len(byName), want)
	}
	theta := make([]float32, a.Size)
	for _, q := range a.Params {
		t, ok := byName[q.Name]
		if !ok {
			return nil, fmt.Errorf("%w: tensor %s is missing", ErrMismatch, q.Name)
		}
		want := []int{q.Cols, q.Rows}
		if q.Bias {
			want = []int{q.Cols}
		}
		if !slices.Equal(t.Shape, want) {
			return nil, fmt.Errorf("%w: tensor %s has shape %v, want %v", ErrMismatch, q.Name, t.Shape, want)
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMismatch, err)
		}
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: tensor %s value %d is %v", ErrNonFinite, q.Name, i, x)
			}
		}
		dst := theta[q.Off : q.Off+q.Len()]
		if q.Bias {
			copy(dst, v)
			continue
		}
		for o := range q.Cols {
			for i := range q.Rows {
				dst[i*q.Cols+o] = v[o*q.Rows+i]
			}
		}
	}
	p := newPolicy(a, theta)
	if norm != nil {
		if err := p.SetNormalization(norm); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMismatch, err)
		}
	}
	if err := p.selfTest(card.Spaces); err != nil {
		return nil, err
	}
	return p, nil
}

// ErrNonFinite is returned (wrapped) by Load when a tensor holds a NaN or
// an infinity, or when the policy's outputs on the middle of its
// observation box are not finite (finite weights can still overflow).
var ErrNonFinite = errors.New("policy: not finite")

// selfTest runs the loaded policy on the middle of the card's observation
// box and checks that the value and every log-probability are finite, so
// that a policy whose weights overflow is refused at load rather than
// answering NaN for every observation.
func (p *Policy) selfTest(sp env.Spaces) error {
	obs := make([]float64, 0, p.arch.Obs)
	for _, k := range sp.Keys {
		b := sp.Observation[k]
		for i := range b.Low {
			// The middle, or 0 clamped into an unbounded box.
			m := b.Low[i]/2 + b.High[i]/2
			if math.IsNaN(m) || math.IsInf(m, 0) {
				m = max(b.Low[i], min(b.High[i], 0))
			}
			if math.IsNaN(m) || math.IsInf(m, 0) {
				return fmt.Errorf("%w: observation %q bounds of value %d are [%v, %v]", ErrMismatch, k, i, b.Low[i], b.High[i])
			}
			obs = append(obs, m)
		}
	}
	for len(obs) < p.arch.Obs { // a residual policy's features: the rule holds
		obs = append(obs, 0)
	}
	act := make([]int, len(p.arch.Nvec))
	var v, lp [1]float64
	if err := p.Step(obs, true, nil, act, v[:], lp[:]); err != nil {
		return fmt.Errorf("policy: self-test: %w", err)
	}
	if math.IsNaN(v[0]) || math.IsInf(v[0], 0) {
		return fmt.Errorf("%w: the critic's value of the box's middle is %v", ErrNonFinite, v[0])
	}
	for i, l := range p.logp {
		if math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
			return fmt.Errorf("%w: the actor's log-probability %d of the box's middle is %v", ErrNonFinite, i, l)
		}
	}
	return nil
}

// flatSize checks a card's observation layout and returns its flat size.
func flatSize(s env.Spaces) (int, error) {
	if len(s.Keys) == 0 {
		return 0, fmt.Errorf("%w: observation layout has no keys", ErrMismatch)
	}
	n := 0
	for _, k := range s.Keys {
		b, ok := s.Observation[k]
		if !ok {
			return 0, fmt.Errorf("%w: observation key %q has no box", ErrMismatch, k)
		}
		if len(b.Low) != b.Size() || len(b.High) != b.Size() {
			return 0, fmt.Errorf("%w: observation %q bounds have %d/%d entries, want %d", ErrMismatch, k, len(b.Low), len(b.High), b.Size())
		}
		n += b.Size()
	}
	return n, nil
}

// Size limits of the files Read reads. The largest trained policy is
// about 150 KB of weights and 8 KB of card; a [1024, 1024] net over the
// streamscale observation is about 12 MB.
const (
	MaxCardBytes    = 1 << 20  // 1 MiB
	MaxWeightsBytes = 64 << 20 // 64 MiB
)

// ErrNotRegular is returned (wrapped) by Read for a path that is not a
// regular file (a directory, a FIFO, a device), which it refuses without
// opening it: opening a FIFO blocks until a writer appears.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned (wrapped) by Read for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// ReadRegular reads the regular file name of fsys, of at most limit
// bytes. It checks the file's type and size before opening it (fs.Stat),
// again on the open file, and reads at most limit+1 bytes, so a file
// that grows under it is refused too. A FIFO swapped in between the
// check and the open would still block the open; the check closes the
// ordinary case (a FIFO or device left in place of the file).
func ReadRegular(fsys fs.FS, name string, limit int64) ([]byte, error) {
	check := func(st fs.FileInfo) error {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is %w (mode %v)", name, ErrNotRegular, st.Mode().Type())
		}
		if st.Size() > limit {
			return fmt.Errorf("%s has %d bytes: %w (limit %d bytes)", name, st.Size(), ErrTooLarge, limit)
		}
		return nil
	}
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := check(st); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(st); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while read: %w", name, limit, ErrTooLarge)
	}
	return b, nil
}

// Read reads <name>.safetensors and <name>.json from fsys (name is
// usually FileName) and loads them with Load. Each must be a regular file
// within its limit (MaxCardBytes, MaxWeightsBytes; ReadRegular). The card
// may carry no field this package does not know.
func Read(fsys fs.FS, name string) (*Policy, *Card, error) {
	cb, err := ReadRegular(fsys, name+".json", MaxCardBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	var card Card
	dec := json.NewDecoder(bytes.NewReader(cb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&card); err != nil {
		return nil, nil, fmt.Errorf("policy: policy card %s.json: %w", name, err)
	}
	wb, err := ReadRegular(fsys, name+".safetensors", MaxWeightsBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	p, err := Load(wb, &card)
	if err != nil {
		return nil, nil, err
	}
	return p, &card, nil
}
