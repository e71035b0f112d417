// Package policytest writes policy artifacts for the eval packages'
// tests: a residual policy (agents/residual) that follows its base rule
// whatever it sees, so that a test can tell what a live run over it must
// do without a trained policy. Deterministic (no randomness: the weights
// are zero but the follow biases); file I/O only in WriteFollowResidual.
package policytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/ppo/policy"
)

// WriteFollowResidual writes a residual policy over the base rule spec
// rule for scenario sc into dir/name/policy.{json,safetensors}: hidden
// widths [8, 8], zero weights and a bias of 40 on every task's follow
// logit, so its deterministic choice is follow on every task and its
// targets are the rule's.
func WriteFollowResidual(dir, name string, sc env.Config, rule string) error {
	spec, err := rulespec.Parse(rule)
	if err != nil {
		return fmt.Errorf("policytest: %w", err)
	}
	info := residual.NewInfo(spec, sc, residual.NoContext)
	sp := sc.Spaces()
	obs, h, logits := sp.FlatSize()+info.Features, 8, 0
	for _, n := range sp.Nvec {
		logits += n
	}
	// The trainer's layout (policy.New): actor then critic, each layer's
	// weight then bias; the actor's last bias holds the logits.
	actor := obs*h + h + h*h + h + h*logits + logits
	theta := make([]float32, actor+obs*h+h+h*h+h+h+1)
	for off := actor - logits; off < actor; off += len(residual.Choices) {
		theta[off] = 40
	}
	p, err := policy.New(obs, []int{h, h}, sp.Nvec, theta)
	if err != nil {
		return fmt.Errorf("policytest: %w", err)
	}
	var w bytes.Buffer
	sha, err := p.WriteSafetensors(&w)
	if err != nil {
		return fmt.Errorf("policytest: %w", err)
	}
	card := policy.Card{Format: policy.CardFormat, Name: "policytest-follow", Env: "streamscale", Profile: sc.App.Name,
		Hyperparameters: json.RawMessage(`{"net_arch":[8,8]}`), WeightsSHA256: sha, Spaces: sp, Residual: &info}
	for _, ts := range p.Tensors() {
		card.Tensors = append(card.Tensors, ts.Name)
	}
	slices.Sort(card.Tensors)
	cb, err := json.Marshal(card)
	if err != nil {
		return fmt.Errorf("policytest: %w", err)
	}
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("policytest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d, policy.FileName+".safetensors"), w.Bytes(), 0o644); err != nil {
		return fmt.Errorf("policytest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d, policy.FileName+".json"), cb, 0o644); err != nil {
		return fmt.Errorf("policytest: %w", err)
	}
	return nil
}
