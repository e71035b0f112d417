package clasp

// Method is a named planner constructor.
type Method struct {
	Name string
	New  func() (Planner, error)
}

// gated puts a baseline behind CLASP's triggers under its own name: the
// paper applies its triggers (input rate changed consistently for 2 s, or
// throughput short of input for 3 s) to every method. model is the cost
// model the triggers' saturation check uses.
func gated(model CostModel) func(p Planner, err error) (Planner, error) {
	return func(p Planner, err error) (Planner, error) {
		if err != nil {
			return nil, err
		}
		return NewGatedNamed(p, p.Name(), DefaultTriggerConfig(), model)
	}
}

// Baselines are CLASP and the planners the paper compares it with (CLASP,
// FaaSFlow, Zhang24, DS2), by name, each with at most maxWorkers workers;
// every baseline runs behind the same triggers as CLASP, whose saturation
// check uses model.
func Baselines(maxWorkers int, model CostModel) []Method {
	g := gated(model)
	return []Method{
		{"clasp", func() (Planner, error) {
			c := DefaultConfig()
			c.MaxWorkers = maxWorkers
			return New(c)
		}},
		{"faasflow", func() (Planner, error) {
			c := DefaultFaaSFlowConfig()
			c.MaxWorkers = maxWorkers
			return g(NewFaaSFlow(c))
		}},
		{"zhang24", func() (Planner, error) {
			c := DefaultZhang24Config()
			c.MaxWorkers = maxWorkers
			return g(NewZhang24(c))
		}},
		{"ds2", func() (Planner, error) {
			c := DefaultDS2Config()
			c.MaxWorkers = maxWorkers
			return g(NewDS2(c))
		}},
	}
}

// Methods returns every horizontal planner of the closed-loop experiments,
// each with at most maxWorkers workers: the Baselines, the -SP variants
// (FaaSFlow's and Zhang24's worker counts with CLASP's placement), HPA
// (behind CLASP's triggers), clasp-paper: CLASP with the paper's
// projection s = λ_p/Λ alone (Config.Propagate and DrainS off), the
// ablation of our two additions, and clasp-h90: CLASP packing to 90% of W̄
// (Config.Headroom 0.9) instead of the paper's L_w ≤ W̄. model is the cost
// model of the triggers' saturation check.
func Methods(maxWorkers int, model CostModel) []Method {
	ms := Baselines(maxWorkers, model)
	g := gated(model)
	c := DefaultConfig()
	c.MaxWorkers = maxWorkers
	ff := DefaultFaaSFlowConfig()
	ff.MaxWorkers = maxWorkers
	zc := DefaultZhang24Config()
	zc.MaxWorkers = maxWorkers
	hc := DefaultHPAConfig()
	hc.MaxWorkers = maxWorkers
	return append(ms,
		Method{"faasflow-sp", func() (Planner, error) { return NewFaaSFlowSP(c, ff) }},
		Method{"zhang24-sp", func() (Planner, error) { return NewZhang24SP(c, zc) }},
		Method{"hpa", func() (Planner, error) { return g(NewHPA(hc)) }},
		Method{"clasp-paper", func() (Planner, error) {
			cp := c
			cp.Propagate, cp.DrainS = false, 0
			return NewNamed(cp, "clasp-paper")
		}},
		Method{"clasp-h90", func() (Planner, error) {
			ch := c
			ch.Headroom = 0.9
			return NewNamed(ch, "clasp-h90")
		}},
	)
}
