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
	"strconv"
	"strings"

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

// Context names the temporal features an Adapter appends per task after
// the rule's FeaturesPerTask (Info.Context): memory the base rule's
// target does not carry and a one-observation policy cannot form.
// The paper (Table 1) gives the observation no such features; the issue
// that asked for them names the load's trend and the pending allocation,
// and an ablation (configs/ablations/residual-trend.toml) measures them.
type Context string

const (
	// NoContext appends nothing (the default, and every card without a
	// context field).
	NoContext Context = ""
	// Trend appends TrendFeatures per task from the Adapter's memory of
	// the episode's observations: with x = TaskInputRate = log(1 + input
	// events/s),
	//   - the one-step change x_t − x_{t−1} (0 at the first observation);
	//   - the trend f_t − s_t of two exponential moving averages of x
	//     (f_t = f_{t−1} + ½·(x_t − f_{t−1}), s_t = s_{t−1} + 0.05·(x_t − s_{t−1}),
	//     both x at the first observation): a MACD-style signal that a load
	//     ramp is under way, smoothed over the trace's step-to-step noise;
	//   - the pending move log(issued / shown): the target the Adapter
	//     issued at the previous step over the allocation the observation
	//     shows, which is not 0 while an actuation is in flight or the
	//     allocation was clipped (0 before the first action).
	// Each is clipped to [−2, 2], the range of the observation's other
	// change features.
	Trend Context = "trend"
	// "stack:K" (K in [2, MaxStack]) appends, per task, StackFeatures
	// values of each of the K−1 previous observations of the episode,
	// newest first — TaskInputRate, TaskDemandPerCPU, TaskQueue and
	// TaskCPU as the observation gave them — so the policy sees the last
	// K observations of what sizes a task (frame stacking, as Mnih et al.,
	// Nature 2015, stack Atari frames; here only the task's load and
	// allocation, not the whole observation). At the start of an episode
	// the missing observations repeat the first one.
)

// StackFeatures is the number of values per task and past observation a
// "stack:K" context adds; MaxStack bounds K.
const (
	StackFeatures = 4
	MaxStack      = 8
)

// stackColumns are the task features a "stack:K" context repeats.
var stackColumns = [StackFeatures]int{env.TaskInputRate, env.TaskDemandPerCPU, env.TaskQueue, env.TaskCPU}

// TrendFeatures is the number of values per task the Trend context adds.
const TrendFeatures = 3

// Trend's EWMA weights (fast and slow); see Trend.
const (
	trendFast = 0.5
	trendSlow = 0.05
)

// ParseContext checks a context name (as -residual-context takes it):
// "", "trend" or "stack:K".
func ParseContext(s string) (Context, error) {
	switch c := Context(s); c {
	case NoContext, Trend:
		return c, nil
	}
	if rest, ok := strings.CutPrefix(s, "stack:"); ok {
		k, err := strconv.Atoi(rest)
		if err == nil && k >= 2 && k <= MaxStack && strconv.Itoa(k) == rest {
			return Context(s), nil
		}
		return "", fmt.Errorf("residual: context %q: want stack:K with K an integer in [2, %d]", s, MaxStack)
	}
	return "", fmt.Errorf("residual: unknown context %q (want \"\", %q or stack:K)", s, Trend)
}

// Stack is K of a "stack:K" context, 0 for any other.
func (c Context) Stack() int {
	if rest, ok := strings.CutPrefix(string(c), "stack:"); ok {
		if k, err := strconv.Atoi(rest); err == nil && k >= 2 && k <= MaxStack {
			return k
		}
	}
	return 0
}

// PerTask is the number of observation values the Adapter appends per
// task: FeaturesPerTask, plus the context's.
func (c Context) PerTask() int {
	switch {
	case c == Trend:
		return FeaturesPerTask + TrendFeatures
	case c.Stack() > 0:
		return FeaturesPerTask + StackFeatures*(c.Stack()-1)
	}
	return FeaturesPerTask
}

// Info is what a policy card records of a residual policy (policy.Card's
// Residual): the base rule's spec (rulespec), the choices in index order
// and the number of observation values appended after the flattened
// Dict observation.
// MinCPU and MaxCPU are the allocation bounds of the scenario it was
// trained on (millicores): TaskCPU = allocation / MaxCPU, and targets are
// clipped to [MinCPU, MaxCPU].
// Context is the temporal context appended after the rule's features
// ("" for none).
type Info struct {
	Base     string   `json:"base"`
	Choices  []string `json:"choices"`
	Features int      `json:"features"`
	MinCPU   float64  `json:"min_cpu"`
	MaxCPU   float64  `json:"max_cpu"`
	Context  Context  `json:"context,omitempty"`
}

// NewInfo returns the Info of a residual policy over base for the
// scenario sc, with the temporal context ctx.
func NewInfo(base rulespec.Rule, sc env.Config, ctx Context) Info {
	lo, hi := rulespec.ScenarioBounds(sc)
	return Info{Base: base.String(), Choices: append([]string(nil), Choices[:]...), Features: ctx.PerTask() * len(sc.App.Tasks), MinCPU: lo, MaxCPU: hi, Context: ctx}
}

// Check reports whether the card's record is one this package can run:
// the choices and context it knows, Context.PerTask values per task of an
// n-task scenario.
func (i Info) Check(n int) error {
	if _, err := ParseContext(string(i.Context)); err != nil {
		return err
	}
	if len(i.Choices) != len(Choices) {
		return fmt.Errorf("residual: %d choices recorded, want %d", len(i.Choices), len(Choices))
	}
	for k, c := range i.Choices {
		if c != Choices[k] {
			return fmt.Errorf("residual: choice %d is %q, want %q", k, c, Choices[k])
		}
	}
	if i.Features != i.Context.PerTask()*n {
		return fmt.Errorf("residual: %d features recorded for %d tasks, want %d", i.Features, n, i.Context.PerTask()*n)
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
	ctx    Context
	minCPU float64
	maxCPU float64
	n      int
	target []float64 // the rule's targets for the last observation
	task   []float64 // the last observation's task features
	out    []float64
	// Trend memory (ctx == Trend), one value per task: the last input
	// rate, the two EWMAs, the targets last issued (issued is empty
	// before the first Action of an episode), and the context values of
	// the last observation.
	rate, fast, slow, issued []float64
	trend                    []float64
	// Stack memory (ctx "stack:K", stack = K): the StackFeatures values of
	// every task for the K−1 previous observations, newest first
	// (observation-major: hist[j·n·StackFeatures:] is observation t−1−j);
	// empty before the first observation of an episode.
	stack int
	hist  []float64
	cur   []float64 // scratch: this observation's stacked columns
	extra int       // context values per task (Context.PerTask − FeaturesPerTask)
}

// New builds the base rule for the scenario, without temporal context.
func New(base rulespec.Rule, sc env.Config) (*Adapter, error) {
	return NewContext(base, sc, NoContext)
}

// NewContext builds the base rule for the scenario, with the temporal
// context ctx.
func NewContext(base rulespec.Rule, sc env.Config, ctx Context) (*Adapter, error) {
	if _, err := ParseContext(string(ctx)); err != nil {
		return nil, err
	}
	c, err := base.New(sc)
	if err != nil {
		return nil, err
	}
	lo, hi := rulespec.ScenarioBounds(sc)
	return &Adapter{base: c, ctx: ctx, minCPU: lo, maxCPU: hi, stack: ctx.Stack(), extra: ctx.PerTask() - FeaturesPerTask}, nil
}

// Reset starts a new episode of the base rule.
func (a *Adapter) Reset(seed uint64) error {
	a.n = 0
	a.rate, a.fast, a.slow, a.issued, a.hist = a.rate[:0], a.fast[:0], a.slow[:0], a.issued[:0], a.hist[:0]
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
	switch {
	case a.ctx == Trend:
		a.observeTrend()
	case a.stack > 0:
		a.observeStack()
	}
	return nil
}

// observeStack advances the stack memory: the features are those of the
// K−1 observations before a.task (the first one repeated at an episode's
// start), kept in a.trend, and a.task becomes the newest of the history.
func (a *Adapter) observeStack() {
	row := a.n * StackFeatures
	cur := a.cur[:0]
	for k := range a.n {
		for _, c := range stackColumns {
			cur = append(cur, a.task[k*env.TaskFeatures+c])
		}
	}
	a.cur = cur
	if len(a.hist) != (a.stack-1)*row {
		a.hist = a.hist[:0]
		for range a.stack - 1 {
			a.hist = append(a.hist, cur...)
		}
	}
	// Features, task by task: observation t−1 … t−K+1 of each.
	a.trend = a.trend[:0]
	for k := range a.n {
		for j := range a.stack - 1 {
			a.trend = append(a.trend, a.hist[j*row+k*StackFeatures:j*row+(k+1)*StackFeatures]...)
		}
	}
	copy(a.hist[row:], a.hist[:len(a.hist)-row])
	copy(a.hist[:row], cur)
}

// observeTrend advances the Trend memory by the observation in a.task
// and writes its context values (see Trend).
func (a *Adapter) observeTrend() {
	first := len(a.rate) != a.n
	if first {
		a.rate, a.fast, a.slow = a.rate[:0], a.fast[:0], a.slow[:0]
	}
	a.trend = a.trend[:0]
	for k := range a.n {
		x := a.task[k*env.TaskFeatures+env.TaskInputRate]
		if first {
			a.rate, a.fast, a.slow = append(a.rate, x), append(a.fast, x), append(a.slow, x)
		}
		change := x - a.rate[k]
		a.rate[k] = x
		a.fast[k] += trendFast * (x - a.fast[k])
		a.slow[k] += trendSlow * (x - a.slow[k])
		pending := 0.0
		if len(a.issued) == a.n {
			if shown := a.task[k*env.TaskFeatures+env.TaskCPU] * a.maxCPU; shown > 0 && a.issued[k] > 0 {
				pending = math.Log(a.issued[k] / shown)
			}
		}
		a.trend = append(a.trend, clip2(change), clip2(a.fast[k]-a.slow[k]), clip2(pending))
	}
}

func clip2(x float64) float64 { return min(max(x, -2), 2) }

// AppendFeatures appends the Context.PerTask values of every task (task
// by task) for the last observed step to dst: the package's
// AppendFeatures, each task's followed by its context values.
func (a *Adapter) AppendFeatures(dst []float64) []float64 {
	per := a.extra
	if per == 0 {
		return AppendFeatures(dst, a.target, a.task, a.maxCPU)
	}
	for k := range a.n {
		dst = AppendFeatures(dst, a.target[k:k+1], a.task[k*env.TaskFeatures:(k+1)*env.TaskFeatures], a.maxCPU)
		dst = append(dst, a.trend[k*per:(k+1)*per]...)
	}
	return dst
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
	if a.ctx == Trend {
		a.issued = append(a.issued[:0], a.out...)
	}
	return env.Action{Targets: a.out}, nil
}

// MarshalBinary saves the episode state, for a training checkpoint: the
// targets and task features of the last observation, the Trend memory
// (with that context), then the base rule's state. It fails for a rule
// that cannot save one.
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
	put := func(xs []float64) {
		for _, x := range xs {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
		}
	}
	if a.n > 0 {
		put(a.target)
		put(a.task)
		if a.ctx == Trend {
			has := byte(0)
			if len(a.issued) == a.n {
				has = 1
			}
			out = append(out, has)
			put(a.rate)
			put(a.fast)
			put(a.slow)
			put(a.trend)
			if has == 1 {
				put(a.issued)
			}
		}
		if a.stack > 0 {
			put(a.trend)
			put(a.hist)
		}
	}
	return append(out, rule...), nil
}

// UnmarshalBinary restores a state saved by MarshalBinary under the same
// base rule and context.
func (a *Adapter) UnmarshalBinary(b []byte) error {
	u, ok := a.base.(interface{ UnmarshalBinary([]byte) error })
	if !ok {
		return fmt.Errorf("residual: base rule %T cannot restore a state", a.base)
	}
	if len(b) < 4 {
		return errors.New("residual: state truncated")
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > 64 {
		return fmt.Errorf("residual: state of %d tasks", n)
	}
	off := 4
	get := func(k int) ([]float64, bool) {
		if len(b)-off < 8*k {
			return nil, false
		}
		xs := make([]float64, k)
		for i := range xs {
			xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[off+8*i:]))
		}
		off += 8 * k
		return xs, true
	}
	bad := fmt.Errorf("residual: state of %d tasks in %d bytes", n, len(b))
	var target, task, rate, fast, slow, trend, issued, hist []float64
	if n > 0 {
		var ok1, ok2 bool
		target, ok1 = get(n)
		task, ok2 = get(n * env.TaskFeatures)
		if !ok1 || !ok2 {
			return bad
		}
		if a.ctx == Trend {
			if off >= len(b) || b[off] > 1 {
				return bad
			}
			has := b[off] == 1
			off++
			var oks [5]bool
			rate, oks[0] = get(n)
			fast, oks[1] = get(n)
			slow, oks[2] = get(n)
			trend, oks[3] = get(n * TrendFeatures)
			oks[4] = true
			if has {
				issued, oks[4] = get(n)
			}
			for _, ok := range oks {
				if !ok {
					return bad
				}
			}
		}
		if a.stack > 0 {
			var ok1, ok2 bool
			m := n * StackFeatures * (a.stack - 1)
			trend, ok1 = get(m)
			hist, ok2 = get(m)
			if !ok1 || !ok2 {
				return bad
			}
		}
	}
	if err := u.UnmarshalBinary(b[off:]); err != nil {
		return err
	}
	a.n = n
	a.target = append(a.target[:0], target...)
	a.task = append(a.task[:0], task...)
	a.out = append(a.out[:0], target...)
	a.rate = append(a.rate[:0], rate...)
	a.fast = append(a.fast[:0], fast...)
	a.slow = append(a.slow[:0], slow...)
	a.trend = append(a.trend[:0], trend...)
	a.issued = append(a.issued[:0], issued...)
	a.hist = append(a.hist[:0], hist...)
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
