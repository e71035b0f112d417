package policy

import (
	"fmt"
	"math"
)

// Normalization is Stable-Baselines3's VecNormalize state as a policy
// carries it: the running observation statistics it normalises raw
// observations with, and the running statistics of the discounted return
// the rewards it was trained on were scaled by. The card records the
// scalars; ObsMean and ObsVar are the artifact's F64 tensors
// obs_rms.mean and obs_rms.var (present when NormObs).
//
// With NormObs, the network sees, per element i (SB3's _normalize_obs,
// computed in float64 and then rounded to float32 as SB3's astype does):
//
//	x̂_i = clip((x_i − ObsMean_i) / √(ObsVar_i + Epsilon), −ClipObs, ClipObs)
//
// With NormReward, training rewards were r / √(RetVar + Epsilon), clipped
// to ±ClipReward, so the critic's values are in those units: multiply by
// RewardScale to get the environment's.
type Normalization struct {
	NormObs    bool    `json:"norm_obs"`    // observations are normalised [norm_obs]
	NormReward bool    `json:"norm_reward"` // rewards were scaled during training [norm_reward]
	ClipObs    float64 `json:"clip_obs"`    // bound of a normalised observation [clip_obs]
	ClipReward float64 `json:"clip_reward"` // bound of a scaled reward [clip_reward]
	Epsilon    float64 `json:"epsilon"`     // added to the variances under the square root [epsilon]
	Gamma      float64 `json:"gamma"`       // discount of the return whose variance scales rewards [gamma]
	ObsCount   float64 `json:"obs_count"`   // obs_rms.count: 1e-4 plus the observations seen
	RetMean    float64 `json:"ret_mean"`    // ret_rms.mean
	RetVar     float64 `json:"ret_var"`     // ret_rms.var
	RetCount   float64 `json:"ret_count"`   // ret_rms.count

	ObsMean []float64 `json:"-"` // obs_rms.mean, one per flat observation element (tensor obs_rms.mean)
	ObsVar  []float64 `json:"-"` // obs_rms.var (tensor obs_rms.var)
}

// Tensor names of the observation statistics in the artifact.
const (
	ObsMeanTensor = "obs_rms.mean"
	ObsVarTensor  = "obs_rms.var"
)

// RewardScale is √(RetVar + Epsilon) when rewards were normalised (the
// factor from the critic's units to the environment's), else 1.
func (n *Normalization) RewardScale() float64 {
	if n == nil || !n.NormReward {
		return 1
	}
	return math.Sqrt(n.RetVar + n.Epsilon)
}

// check validates n for a policy of obs inputs.
func (n *Normalization) check(obs int) error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case bad(n.Epsilon) || n.Epsilon <= 0:
		return fmt.Errorf("policy: normalization epsilon %v, want > 0", n.Epsilon)
	case n.NormObs && (bad(n.ClipObs) || n.ClipObs <= 0):
		return fmt.Errorf("policy: clip_obs %v, want > 0", n.ClipObs)
	case n.NormReward && (bad(n.ClipReward) || n.ClipReward <= 0):
		return fmt.Errorf("policy: clip_reward %v, want > 0", n.ClipReward)
	case bad(n.RetVar) || n.RetVar < 0 || bad(n.RetMean) || bad(n.Gamma):
		return fmt.Errorf("policy: return statistics are not finite")
	}
	if !n.NormObs {
		if len(n.ObsMean) != 0 || len(n.ObsVar) != 0 {
			return fmt.Errorf("policy: observation statistics without norm_obs")
		}
		return nil
	}
	if len(n.ObsMean) != obs || len(n.ObsVar) != obs {
		return fmt.Errorf("policy: observation statistics have %d/%d entries, want %d", len(n.ObsMean), len(n.ObsVar), obs)
	}
	for i := range obs {
		if bad(n.ObsMean[i]) || bad(n.ObsVar[i]) || n.ObsVar[i] < 0 {
			return fmt.Errorf("policy: observation statistics %d are %v/%v", i, n.ObsMean[i], n.ObsVar[i])
		}
	}
	return nil
}

// clone returns a deep copy of n (nil for nil).
func (n *Normalization) clone() *Normalization {
	if n == nil {
		return nil
	}
	c := *n
	c.ObsMean = append([]float64(nil), n.ObsMean...)
	c.ObsVar = append([]float64(nil), n.ObsVar...)
	if !n.NormObs {
		c.ObsMean, c.ObsVar = nil, nil
	}
	return &c
}

// SetNormalization makes p apply n (copied) to every raw observation from
// now on; nil removes normalisation. The trainer calls it after each
// update of its running statistics; a policy without it behaves exactly
// as one written before normalisation existed.
func (p *Policy) SetNormalization(n *Normalization) error {
	if n == nil {
		p.norm, p.std = nil, nil
		return nil
	}
	if err := n.check(p.arch.Obs); err != nil {
		return err
	}
	if p.norm == nil {
		p.norm = &Normalization{}
	}
	mean, vr := p.norm.ObsMean[:0], p.norm.ObsVar[:0]
	*p.norm = *n
	p.norm.ObsMean, p.norm.ObsVar = append(mean, n.ObsMean...), append(vr, n.ObsVar...)
	p.std = p.std[:0]
	for _, v := range n.ObsVar {
		p.std = append(p.std, math.Sqrt(v+n.Epsilon))
	}
	return nil
}

// Normalization returns a copy of the statistics p applies, or nil.
func (p *Policy) Normalization() *Normalization { return p.norm.clone() }

// NormalizeObs writes into dst (len(obs) entries) the network's input for
// the raw observations obs: the normalised observation (see
// Normalization) rounded to float32, or the observation itself rounded
// when p has no observation statistics. Step, Act, Values and Evaluate
// apply the same on entry.
func (p *Policy) NormalizeObs(dst []float32, obs []float64) {
	if p.norm == nil || !p.norm.NormObs {
		for i, v := range obs {
			dst[i] = float32(v)
		}
		return
	}
	m, k, c := p.norm.ObsMean, p.arch.Obs, p.norm.ClipObs
	for i, v := range obs {
		j := i % k
		x := (v - m[j]) / p.std[j]
		dst[i] = float32(min(max(x, -c), c))
	}
}
