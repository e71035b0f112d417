package clasp

// NewFaaSFlowSP returns FaaSFlow-SP: CLASP (estimator, trigger, demand,
// parallelism, placement, migration) with FaaSFlow's worker count
// N = ⌈λ_p/T̄⌉, packed by PlaceN. It isolates CLASP's placement from its
// scaling.
func NewFaaSFlowSP(cfg Config, ff FaaSFlowConfig) (*CLASP, error) {
	f, err := NewFaaSFlow(ff)
	if err != nil {
		return nil, err
	}
	return newCLASP(cfg, "faasflow-sp", f)
}

// NewZhang24SP returns Zhang24-SP: CLASP with Zhang24's worker count
// ⌈Σ P_o/Slots⌉ (its fitted overhead models and parallelism), packed by
// PlaceN.
func NewZhang24SP(cfg Config, zc Zhang24Config) (*CLASP, error) {
	z, err := NewZhang24(zc)
	if err != nil {
		return nil, err
	}
	return newCLASP(cfg, "zhang24-sp", z)
}

// Gated runs a planner every call (so its history stays complete) but
// applies its plan only when a Trigger fires, as CLASP does; otherwise it
// holds the current configuration. It lets a baseline re-plan on CLASP's
// schedule.
type Gated struct {
	name string
	p    Planner
	t    *Trigger
	m    CostModel
}

// NewGated wraps p. Held plans report loads under model.
func NewGated(p Planner, cfg TriggerConfig, model CostModel) (*Gated, error) {
	if p == nil {
		return nil, invalidf("gated: nil planner")
	}
	if err := model.validate(); err != nil {
		return nil, err
	}
	t, err := NewTrigger(cfg)
	if err != nil {
		return nil, err
	}
	return &Gated{name: p.Name() + "+trigger", p: p, t: t, m: model}, nil
}

// NewGatedNamed is NewGated with another Name: the experiments run every
// baseline behind the triggers, as the paper does, under its own name.
func NewGatedNamed(p Planner, name string, cfg TriggerConfig, model CostModel) (*Gated, error) {
	if name == "" {
		return nil, invalidf("gated: empty planner name")
	}
	g, err := NewGated(p, cfg, model)
	if err != nil {
		return nil, err
	}
	g.name = name
	return g, nil
}

// Name implements Planner: the wrapped planner's name with "+trigger"
// unless NewGatedNamed set another.
func (g *Gated) Name() string { return g.name }

// Reset implements Planner.
func (g *Gated) Reset() {
	g.p.Reset()
	g.t.Reset()
}

// Plan implements Planner.
func (g *Gated) Plan(now float64, ob Observation) (Plan, error) {
	if !finite(now) {
		return Plan{}, invalidf("time %v", now)
	}
	if err := ob.Validate(); err != nil {
		return Plan{}, err
	}
	p, err := g.p.Plan(now, ob)
	if err != nil {
		return Plan{}, err
	}
	fire, reason := g.t.Observe(now, ob.InputRate, ob.Throughput)
	if !ob.placed() {
		fire, reason = true, "initial placement"
	}
	if !fire {
		h := hold(g.Name(), now, &ob, Derive(&ob), g.m, "no trigger")
		h.Explain.Scores = p.Explain.Scores
		return h, nil
	}
	p.Planner = g.Name()
	p.Reason = reason
	g.t.Rebase(now, ob.InputRate, now+p.DurationS)
	return p, nil
}
