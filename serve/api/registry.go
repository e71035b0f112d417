package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/internal/command"
	"streamscale/policyset"
	"streamscale/ppo/policy"
)

// validName is what a policy (directory) name may look like: it appears
// in URLs and metric-free log lines.
var validName = policyset.ValidName

// registry is an immutable set of loaded policies; the server swaps whole
// registries atomically.
type registry struct {
	byName map[string]*entry
	names  []string // sorted
	list   []byte   // body of GET /v1/policies
}

// entry is one loaded policy. Everything but the pool is read-only.
type entry struct {
	name    string
	set     string // policy set (policyset manifest); empty without a manifest
	version string // hex SHA-256 of the weights
	card    *policy.Card
	lay     layout
	in      int            // values of the policy's input: lay.size, and a residual policy's features
	res     *residual.Info // the card's Residual; nil for a policy whose choices are the action space's
	nvec    []int
	deltas  []float64 // millicores of each choice (or its target utilization)
	// choiceKey opens the answer's per-task choice values: "deltas", or
	// "target_utilization" for a target-utilization action set, or
	// "choices" (named, choiceNames) for a residual policy.
	choiceKey   []byte
	choiceNames [][]byte // a residual policy's choices, JSON-quoted
	nchoices    int      // choices per dimension: len(deltas), or a residual policy's
	rows        int      // rows of a probabilities evaluation: 1 + Σ(nvec−1)
	base        *policy.Policy
	pool        sync.Pool // *policy.Policy clones: a Policy is not safe for concurrent use
	comb        combiner  // merges concurrent single deterministic requests
	v2          v2Model   // Open Inference Protocol view
}

// policy returns a clone of the policy for one request's exclusive use;
// give it back with put.
func (e *entry) policy() *policy.Policy { return e.pool.Get().(*policy.Policy) }
func (e *entry) put(p *policy.Policy)   { e.pool.Put(p) }

// loadRegistry loads the policies of dir. With a manifest
// (policyset.ManifestName) it loads every model the manifest lists,
// <dir>/<set>/<profile>/policy.*, named policyset.ModelName(set, profile),
// and a listed policy that is missing fails the load. Without one it reads
// every <dir>/<name>/policy.json (with its weights), served as <name>;
// subdirectories without policy.json (e.g. a training run in progress) are
// skipped. Either way every policy is validated and self-tested, and any
// artifact that is present but invalid fails the whole load.
func loadRegistry(dir string, m *metrics) (*registry, []string, error) {
	reg := &registry{byName: map[string]*entry{}}
	add := func(name, set, sub, profile string) error {
		p, card, err := policy.Read(os.DirFS(sub), policy.FileName)
		if err != nil {
			return fmt.Errorf("api: policy %s: %w", name, err)
		}
		if profile != "" && card.Profile != profile {
			return fmt.Errorf("api: policy %s: card of %s has profile %q, the manifest lists %q", name, sub, card.Profile, profile)
		}
		e, err := newEntry(name, p, card)
		if err != nil {
			return err
		}
		e.set = set
		if m != nil {
			e.comb.passes, e.comb.rows = &m.passes, &m.rows
		}
		reg.byName[name] = e
		reg.names = append(reg.names, name)
		return nil
	}
	var skipped []string
	man, err := policyset.Read(os.DirFS(dir))
	switch {
	case err == nil:
		for _, md := range man.Models() {
			if err := add(md.Name, md.Set, filepath.Join(dir, filepath.FromSlash(md.Dir)), md.Profile); err != nil {
				return nil, nil, err
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("api: policies %s: %w", dir, err)
	default:
		des, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("api: policies: %w", err)
		}
		for _, de := range des {
			name := de.Name()
			sub := filepath.Join(dir, name)
			if st, err := os.Stat(sub); err != nil || !st.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(sub, policy.FileName+".json")); errors.Is(err, fs.ErrNotExist) {
				skipped = append(skipped, name)
				continue
			}
			if !validName.MatchString(name) {
				return nil, nil, fmt.Errorf("api: policy directory %q: name must match %s", name, validName)
			}
			if err := add(name, "", sub, ""); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(reg.names) == 0 {
		return nil, skipped, fmt.Errorf("api: no policies in %s (want %s/%s or %s/<name>/%s.json)", dir, dir, policyset.ManifestName, dir, policy.FileName)
	}
	slices.Sort(reg.names)
	if reg.list, err = policyList(reg); err != nil {
		return nil, nil, err
	}
	return reg, skipped, nil
}

// newEntry checks that the card describes a streamscale policy the server
// can serve, builds its layout and runs the self-test.
func newEntry(name string, p *policy.Policy, card *policy.Card) (*entry, error) {
	sp := card.Spaces
	e := &entry{name: name, version: card.WeightsSHA256, card: card, base: p, nvec: p.Nvec(), deltas: sp.DeltaMillicores, choiceKey: []byte(`],"deltas":[`)}
	if u := sp.TargetUtilization; len(u) > 0 {
		// Target-utilization choices (env.Config.ActionUtilization): the
		// answer names each choice's utilization instead of a delta.
		e.deltas, e.choiceKey = u, []byte(`],"target_utilization":[`)
	}
	for k := range e.lay.n {
		e.lay.n[k] = -1
	}
	prev := -1
	for _, key := range sp.Keys {
		k := slices.Index(keyNames[:], key)
		if k < 0 {
			return nil, fmt.Errorf("api: policy %s: observation key %q is not app, server or task", name, key)
		}
		if k <= prev {
			return nil, fmt.Errorf("api: policy %s: observation keys %v are not in the order app, server, task", name, sp.Keys)
		}
		prev = k
		box := sp.Observation[key]
		e.lay.off[k], e.lay.n[k] = e.lay.size, box.Size()
		e.lay.size += box.Size()
		e.lay.low = append(e.lay.low, box.Low...)
		e.lay.high = append(e.lay.high, box.High...)
	}
	e.in, e.nchoices = e.lay.size, len(e.deltas)
	if r := card.Residual; r != nil {
		// A residual policy (agents/residual): the client runs the base
		// rule and sends its targets; the policy reads the observation
		// followed by residual.AppendFeatures of them and corrects them.
		n := len(e.nvec)
		if err := r.Check(n); err != nil {
			return nil, fmt.Errorf("api: policy %s: %w", name, err)
		}
		if r.Context != residual.NoContext {
			// Its features need the episode's memory, which a stateless
			// endpoint does not keep and the request does not carry.
			return nil, fmt.Errorf("api: policy %s: residual context %q is not served (its features need the episode's memory; only context-free residual policies are)", name, r.Context)
		}
		if _, err := rulespec.Parse(r.Base); err != nil {
			return nil, fmt.Errorf("api: policy %s: base rule: %w", name, err)
		}
		if e.lay.n[keyTask] != n*env.TaskFeatures {
			return nil, fmt.Errorf("api: policy %s: residual policy of %d tasks observes %d task values, want %d", name, n, e.lay.n[keyTask], n*env.TaskFeatures)
		}
		e.res, e.lay.rule, e.in, e.nchoices = r, n, e.lay.size+r.Features, len(r.Choices)
		e.choiceKey, e.deltas = []byte(`],"choices":[`), nil
		for _, c := range r.Choices {
			e.choiceNames = append(e.choiceNames, strconv.AppendQuote(nil, c))
		}
	}
	if e.in != p.ObsSize() {
		return nil, fmt.Errorf("api: policy %s: layout has %d values (residual features included), policy expects %d", name, e.in, p.ObsSize())
	}
	for i := range e.lay.low {
		if !(e.lay.low[i] <= e.lay.high[i]) {
			return nil, fmt.Errorf("api: policy %s: bounds of value %d are [%v, %v]", name, i, e.lay.low[i], e.lay.high[i])
		}
	}
	e.rows = 1
	for d, n := range e.nvec {
		if n != e.nchoices {
			return nil, fmt.Errorf("api: policy %s: action dimension %d has %d choices but the card gives %d choice values", name, d, n, e.nchoices)
		}
		e.rows += n - 1
	}
	if err := e.initV2(); err != nil {
		return nil, fmt.Errorf("api: policy %s: %w", name, err)
	}
	e.pool.New = func() any { return e.base.Clone() }
	if err := e.selfTest(); err != nil {
		return nil, fmt.Errorf("api: policy %s: self-test: %w", name, err)
	}
	return e, nil
}

// selfTest runs the policy on the middle of its observation box in every
// mode (deterministic alone, as the combiner runs it, and with
// probabilities; sampled with and without) and checks that the outputs
// are in range, finite, consistent and repeatable. A residual policy is
// tested with rule targets at the middle of its allocation bounds and at
// 0 (the least a client may send), and its corrected targets must lie
// within the bounds.
func (e *entry) selfTest() error {
	sc := newScratch()
	sc.req.n = 1
	sc.req.obs = make([]float64, e.lay.size)
	for i := range sc.req.obs {
		sc.req.obs[i] = e.lay.low[i]/2 + e.lay.high[i]/2
	}
	rules := [][]float64{nil}
	if e.res != nil {
		mid, zero := make([]float64, e.lay.rule), make([]float64, e.lay.rule)
		for k := range mid {
			mid[k] = e.res.MinCPU/2 + e.res.MaxCPU/2
		}
		rules = [][]float64{mid, zero}
	}
	for _, rule := range rules {
		sc.req.rule, sc.req.ruleRows = rule, 1
		if err := e.selfTestOne(sc); err != nil {
			return err
		}
	}
	return nil
}

func (e *entry) selfTestOne(sc *scratch) error {
	for _, sample := range []bool{false, true} {
		sc.req.sample, sc.req.seed, sc.req.probabilities = sample, 1, true
		if err := e.infer(sc); err != nil {
			return err
		}
		if err := e.correct(sc); err != nil {
			return err
		}
		act, v, tg := slices.Clone(sc.actions), sc.values[0], slices.Clone(sc.targets)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("value is %v", v)
		}
		for d, a := range act {
			if a < 0 || a >= e.nvec[d] {
				return fmt.Errorf("action %d is %d, want [0, %d)", d, a, e.nvec[d])
			}
		}
		for k, t := range tg {
			if !(t >= e.res.MinCPU && t <= e.res.MaxCPU) {
				return fmt.Errorf("target %d is %v millicores, want [%v, %v]", k, t, e.res.MinCPU, e.res.MaxCPU)
			}
		}
		off := 0
		for d, n := range e.nvec {
			sum := 0.0
			for _, q := range sc.probs[off : off+n] {
				sum += q
			}
			if !(math.Abs(sum-1) <= 1e-9) { // false for NaN too
				return fmt.Errorf("probabilities of dimension %d sum to %v", d, sum)
			}
			off += n
		}
		sc.req.probabilities = false
		if err := e.run(sc); err != nil {
			return err
		}
		if !slices.Equal(act, sc.actions) || v != sc.values[0] || !slices.Equal(tg, sc.targets) {
			return fmt.Errorf("actions %v value %v targets %v, then %v %v %v for the same input", act, v, tg, sc.actions, sc.values[0], sc.targets)
		}
	}
	return nil
}

// policyInfo is one element of GET /v1/policies.
type policyInfo struct {
	Name        string          `json:"name"`
	Set         string          `json:"set,omitempty"` // policy set of the manifest; absent without one
	Version     string          `json:"version"`
	Profile     string          `json:"profile"`
	Env         string          `json:"env"`
	Observation observationInfo `json:"observation"`
	Action      actionInfo      `json:"action"`
	// Residual, for a residual policy, is its card's record: the base
	// rule (rulespec) whose targets a request carries as rule_targets,
	// the choices, and the allocation bounds the targets are clipped to.
	Residual *residual.Info `json:"residual,omitempty"`
	Training trainingInfo   `json:"training"`
}

type observationInfo struct {
	Keys  []string           `json:"keys"`
	Size  int                `json:"size"`
	Boxes map[string]env.Box `json:"boxes"`
}

type actionInfo struct {
	Nvec              []int     `json:"nvec"`
	DeltaMillicores   []float64 `json:"delta_millicores,omitempty"`   // absent for a target-utilization or residual policy
	TargetUtilization []float64 `json:"target_utilization,omitempty"` // in place of the deltas (env.Config.ActionUtilization)
	Choices           []string  `json:"choices,omitempty"`            // a residual policy's, in place of both
}

type trainingInfo struct {
	Name          string   `json:"name"`
	Seed          uint64   `json:"seed"`
	Transitions   int      `json:"transitions"`
	GradientSteps int      `json:"gradient_steps"`
	BestDevReward *float64 `json:"best_dev_reward"`
	ConfigHash    string   `json:"config_hash"`
	Hidden        []int    `json:"net_arch"`
	command.Build          // commit, go_version
}

func policyList(reg *registry) ([]byte, error) {
	out := struct {
		Policies []policyInfo `json:"policies"`
	}{Policies: []policyInfo{}}
	for _, name := range reg.names {
		e := reg.byName[name]
		c := e.card
		act := actionInfo{Nvec: e.nvec, DeltaMillicores: c.Spaces.DeltaMillicores, TargetUtilization: c.Spaces.TargetUtilization}
		if e.res != nil {
			act = actionInfo{Nvec: e.nvec, Choices: e.res.Choices}
		}
		out.Policies = append(out.Policies, policyInfo{
			Name: name, Set: e.set, Version: e.version, Profile: c.Profile, Env: c.Env,
			Observation: observationInfo{Keys: c.Spaces.Keys, Size: e.lay.size, Boxes: c.Spaces.Observation},
			Action:      act, Residual: e.res,
			Training: trainingInfo{
				Name: c.Name, Seed: c.Seed, Transitions: c.Transitions, GradientSteps: c.GradientSteps,
				BestDevReward: c.BestDevReward, ConfigHash: c.ConfigHash, Hidden: e.base.Hidden(),
				Build: c.Build,
			},
		})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("api: policy list: %w", err)
	}
	return b, nil
}
