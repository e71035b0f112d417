// Package residual turns a vertical base rule into the action space of a
// residual policy: per task, one of five corrections to the rule's target
// (Choices), so that a learner starts at the rule an operator would
// deploy and learns where to deviate from it — residual policy learning
// (Silver et al., "Residual Policy Learning", 2018; Johannink et al.,
// "Residual Reinforcement Learning for Robot Control", ICRA 2019), here
// with a discrete residual over a rule instead of an additive one over a
// continuous controller.
//
// An Adapter runs the base rule on every observation (the rule keeps its
// own memory: the scale-down window, the allocations shown), exposes the
// rule's targets to the policy as FeaturesPerTask extra observation
// values per task, and maps the policy's choices to allocation targets
// (env.Action.Targets). The policy thus sees what the rule would do, and
// the rule's stabilization is memory the policy does not have to learn.
package residual

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"streamscale/agents"
	"streamscale/agents/rulespec"
	"streamscale/env"
)

// Choices names the five residual choices, in action-index order: follow
// the rule's target, scale it by 0.85, 1.15 or 1.35, or hold the
// allocation in force (the observation's TaskCPU). Choice 0 (follow) is
// the one a follow-biased initialisation makes most likely.
var Choices = [5]string{"follow", "x0.85", "x1.15", "x1.35", "hold"}

// Scales are the multipliers of the rule's target of choices 0–3; choice
// 4 (hold) has none.
var Scales = [4]float64{1, 0.85, 1.15, 1.35}

// FeaturesPerTask is the number of values per task an Adapter appends to
// the flattened observation: the rule's target as a share of MaxCPU
// (the observation's own TaskCPU scale), and log(target / allocation
// shown), the rule's intended relative move (0 when it holds).
const FeaturesPerTask = 2

// Info is what a policy card records of a residual policy (policy.Card's
// Residual): the base rule's spec (rulespec), the choices in index order
// and the number of observation values appended after the flattened
// Dict observation.
// MinCPU and MaxCPU are the allocation bounds of the scenario it was
// trained on (millicores): TaskCPU = allocation / MaxCPU, and targets are
// clipped to [MinCPU, MaxCPU].
type Info struct {
	Base     string   `json:"base"`
	Choices  []string `json:"choices"`
	Features int      `json:"features"`
	MinCPU   float64  `json:"min_cpu"`
	MaxCPU   float64  `json:"max_cpu"`
}

// NewInfo returns the Info of a residual policy over base for the
// scenario sc.
func NewInfo(base rulespec.Rule, sc env.Config) Info {
	lo, hi := rulespec.ScenarioBounds(sc)
	return Info{Base: base.String(), Choices: append([]string(nil), Choices[:]...), Features: FeaturesPerTask * len(sc.App.Tasks), MinCPU: lo, MaxCPU: hi}
}

// Check reports whether the card's record is one this package can run:
// the choices it knows, FeaturesPerTask per task of an n-task scenario.
func (i Info) Check(n int) error {
	if len(i.Choices) != len(Choices) {
		return fmt.Errorf("residual: %d choices recorded, want %d", len(i.Choices), len(Choices))
	}
	for k, c := range i.Choices {
		if c != Choices[k] {
			return fmt.Errorf("residual: choice %d is %q, want %q", k, c, Choices[k])
		}
	}
	if i.Features != FeaturesPerTask*n {
		return fmt.Errorf("residual: %d features recorded for %d tasks, want %d", i.Features, n, FeaturesPerTask*n)
	}
	if !(i.MinCPU > 0 && i.MaxCPU >= i.MinCPU && i.MaxCPU <= 1e9) {
		return fmt.Errorf("residual: allocation bounds [%v, %v] millicores invalid", i.MinCPU, i.MaxCPU)
	}
	return nil
}

// AppendFeatures appends the FeaturesPerTask values of every task to dst:
// the base rule's target as a share of maxCPU, and log(target / shown),
// shown being the allocation the observation shows (its TaskCPU ×
// maxCPU; 0 when either is not positive). targets has one value per task
// row of task (the observation's task features, env.TaskFeatures per
// task).
func AppendFeatures(dst, targets, task []float64, maxCPU float64) []float64 {
	for k, t := range targets {
		shown := task[k*env.TaskFeatures+env.TaskCPU] * maxCPU
		move := 0.0
		if shown > 0 && t > 0 {
			move = math.Log(t / shown)
		}
		dst = append(dst, t/maxCPU, move)
	}
	return dst
}

// Apply writes into out the target of every task for its choice: the base
// rule's target scaled by Scales[c] for c < 4, the allocation shown for
// c = 4 (TaskCPU × maxCPU), each clipped to [minCPU, maxCPU].
func Apply(out []float64, choices []int, targets, task []float64, minCPU, maxCPU float64) error {
	if len(choices) != len(targets) || len(out) != len(targets) || len(task) != len(targets)*env.TaskFeatures {
		return fmt.Errorf("residual: %d choices, %d targets and %d task features", len(choices), len(targets), len(task))
	}
	for k, c := range choices {
		switch {
		case c < 0 || c > len(Scales):
			return fmt.Errorf("residual: task %d: choice %d outside [0, %d]", k, c, len(Scales))
		case c == len(Scales):
			out[k] = task[k*env.TaskFeatures+env.TaskCPU] * maxCPU
		default:
			out[k] = targets[k] * Scales[c]
		}
		out[k] = min(max(out[k], minCPU), maxCPU)
	}
	return nil
}

// Adapter runs one base rule for one environment. Not safe for
// concurrent use.
type Adapter struct {
	base   agents.Controller
	minCPU float64
	maxCPU float64
	n      int
	target []float64 // the rule's targets for the last observation
	task   []float64 // the last observation's task features
	out    []float64
}

// New builds the base rule for the scenario.
func New(base rulespec.Rule, sc env.Config) (*Adapter, error) {
	c, err := base.New(sc)
	if err != nil {
		return nil, err
	}
	lo, hi := rulespec.ScenarioBounds(sc)
	return &Adapter{base: c, minCPU: lo, maxCPU: hi}, nil
}

// Reset starts a new episode of the base rule.
func (a *Adapter) Reset(seed uint64) error {
	a.n = 0
	return a.base.Reset(seed)
}

// Observe runs the base rule on obs (advancing its memory by one step)
// and keeps its targets for Features and Action.
func (a *Adapter) Observe(obs env.Observation) error {
	act, err := a.base.Act(obs)
	if err != nil {
		return err
	}
	n := len(obs.Task) / env.TaskFeatures
	if len(act.Targets) != n {
		return fmt.Errorf("residual: base rule gave %d targets for %d tasks", len(act.Targets), n)
	}
	a.n = n
	a.target = append(a.target[:0], act.Targets...)
	a.task = append(a.task[:0], obs.Task...)
	a.out = append(a.out[:0], act.Targets...)
	return nil
}

// AppendFeatures appends the FeaturesPerTask values of every task (task
// by task) for the last observed step to dst (the package's
// AppendFeatures).
func (a *Adapter) AppendFeatures(dst []float64) []float64 {
	return AppendFeatures(dst, a.target, a.task, a.maxCPU)
}

// ErrNotObserved is returned by Action before the first Observe of an
// episode.
var ErrNotObserved = errors.New("residual: no observation yet")

// Action maps one choice per task to the step's action (the package's
// Apply). The returned Targets are the Adapter's buffer, valid until the
// next Action.
func (a *Adapter) Action(choices []int) (env.Action, error) {
	if a.n == 0 {
		return env.Action{}, ErrNotObserved
	}
	if err := Apply(a.out, choices, a.target, a.task, a.minCPU, a.maxCPU); err != nil {
		return env.Action{}, err
	}
	return env.Action{Targets: a.out}, nil
}

// MarshalBinary saves the episode state, for a training checkpoint: the
// targets and task features of the last observation, then the base rule's
// state. It fails for a rule that cannot save one.
func (a *Adapter) MarshalBinary() ([]byte, error) {
	m, ok := a.base.(interface{ MarshalBinary() ([]byte, error) })
	if !ok {
		return nil, fmt.Errorf("residual: base rule %T cannot save its state", a.base)
	}
	rule, err := m.MarshalBinary()
	if err != nil {
		return nil, err
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(a.n))
	if a.n > 0 {
		for _, xs := range [][]float64{a.target, a.task} {
			for _, x := range xs {
				out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
			}
		}
	}
	return append(out, rule...), nil
}

// UnmarshalBinary restores a state saved by MarshalBinary under the same
// base rule.
func (a *Adapter) UnmarshalBinary(b []byte) error {
	u, ok := a.base.(interface{ UnmarshalBinary([]byte) error })
	if !ok {
		return fmt.Errorf("residual: base rule %T cannot restore a state", a.base)
	}
	if len(b) < 4 {
		return errors.New("residual: state truncated")
	}
	n := int(binary.LittleEndian.Uint32(b))
	per := 8 * (1 + env.TaskFeatures) // a target and a task row
	if n > 64 || len(b) < 4+per*n {
		return fmt.Errorf("residual: state of %d tasks in %d bytes", n, len(b))
	}
	if err := u.UnmarshalBinary(b[4+per*n:]); err != nil {
		return err
	}
	vals := make([]float64, (1+env.TaskFeatures)*n)
	for i := range vals {
		vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[4+8*i:]))
	}
	a.n = n
	a.target = append(a.target[:0], vals[:n]...)
	a.task = append(a.task[:0], vals[n:]...)
	a.out = append(a.out[:0], vals[:n]...)
	return nil
}

// Actor is what a Controller needs from a policy: choices for a flat
// observation (the flattened Dict observation followed by the Adapter's
// features).
type Actor interface {
	Act(flat []float64, choices []int) error
}

// Controller runs an Actor over a base rule as an agents.Controller.
type Controller struct {
	a       *Adapter
	actor   Actor
	flat    []float64
	choices []int
}

var _ agents.Controller = (*Controller)(nil)

// NewController returns the residual controller of actor over a.
func NewController(a *Adapter, actor Actor) *Controller {
	return &Controller{a: a, actor: actor}
}

// Reset implements agents.Controller.
// An actor with a Reset(seed) method (a sampling one) is reset too.
func (c *Controller) Reset(seed uint64) error {
	if r, ok := c.actor.(interface{ Reset(uint64) }); ok {
		r.Reset(seed)
	}
	return c.a.Reset(seed)
}

// Act implements agents.Controller: the base rule observes obs, the actor
// chooses a correction per task, and the action carries the corrected
// targets (a copy).
func (c *Controller) Act(obs env.Observation) (env.Action, error) {
	if err := c.a.Observe(obs); err != nil {
		return env.Action{}, err
	}
	c.flat = c.a.AppendFeatures(obs.Flatten(c.flat[:0]))
	if cap(c.choices) < c.a.n {
		c.choices = make([]int, c.a.n)
	}
	c.choices = c.choices[:c.a.n]
	if err := c.actor.Act(c.flat, c.choices); err != nil {
		return env.Action{}, err
	}
	act, err := c.a.Action(c.choices)
	if err != nil {
		return env.Action{}, err
	}
	return env.Action{Targets: append([]float64(nil), act.Targets...)}, nil
}
