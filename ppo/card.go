package ppo

import (
	"encoding/json"
	"slices"

	"streamscale/ppo/policy"
)

// NewCard fills the parts of a policy card that the policy and the
// training configuration determine (format, hyperparameters, seed, config
// hash, weights hash, tensor names, the policy's normalisation
// statistics); the caller sets Name, Env, Profile,
// Spaces, Transitions, GradientSteps, BestDevReward, Commit and GoVersion.
func NewCard(p *policy.Policy, cfg Config, weightsSHA256 string) policy.Card {
	h, err := json.Marshal(cfg)
	if err != nil {
		panic(err) // Config has only plain fields
	}
	c := policy.Card{Format: policy.CardFormat, Hyperparameters: h, Seed: cfg.Seed, ConfigHash: cfg.Hash(), WeightsSHA256: weightsSHA256, Normalization: p.Normalization()}
	for _, t := range p.Tensors() {
		c.Tensors = append(c.Tensors, t.Name)
	}
	slices.Sort(c.Tensors)
	return c
}
