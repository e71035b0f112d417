package clasp

import "math"

// HPAConfig configures the HPA rule.
type HPAConfig struct {
	SlotConfig
	// Target is the target utilization of an operator's instances, in
	// (0, 1]. Default 0.7.
	Target float64
	// Tolerance is the relative band |metric/target − 1| ≤ Tolerance in
	// which the replica count is left alone, in [0, 1). Default 0.1.
	Tolerance float64
	// WindowS is the scale-down stabilization window, seconds ≥ 0: a
	// scale-down goes only as low as the highest recommendation of the last
	// WindowS seconds. Default 300 (Kubernetes' default).
	WindowS float64
	// MinReplicas and MaxReplicas bound P_o, 1 ≤ Min ≤ Max. Defaults 1 and
	// 1,000.
	MinReplicas, MaxReplicas int
}

// DefaultHPAConfig returns the defaults documented on the fields.
func DefaultHPAConfig() HPAConfig {
	return HPAConfig{SlotConfig: DefaultSlotConfig(), Target: 0.7, Tolerance: 0.1, WindowS: 300, MinReplicas: 1, MaxReplicas: 1000}
}

func (c HPAConfig) validate() error {
	if !(c.Target > 0 && c.Target <= 1) || !(c.Tolerance >= 0 && c.Tolerance < 1) || !nonNegative(c.WindowS) || c.MinReplicas < 1 || c.MaxReplicas < c.MinReplicas {
		return invalidf("hpa: configuration %+v out of range", c)
	}
	return c.SlotConfig.validate()
}

type hpaRec struct {
	t       float64
	desired int
}

// HPA is a Kubernetes Horizontal-Pod-Autoscaler-style rule applied to every
// operator's replicas. It is not one of the CLASP paper's baselines; it
// is added as the rule a Kubernetes deployment scales by by default. Its
// metric is the utilization of the operator's current replicas relative to their CPU request, one
// executor slot's S = W/Slots µs/s, u_o = (N_o·τ̄_o + C_o)/(P_o·S), where
// C_o is the CPU o's replicas spent sending requests (requestCPU: a
// container's CPU counter includes it; 0 where workers report no load),
// measured, so it
// saturates near 1 under overload as CPU utilization does),
//
//	desired = ⌈P_o · u_o/Target⌉, unchanged if |u_o/Target − 1| ≤ Tolerance,
//
// clamped to [MinReplicas, MaxReplicas]. Scale-up applies at once; a
// scale-down is stabilized to the highest recommendation of the last WindowS
// seconds (never above the current count). Workers are the ⌈Σ P_o / Slots⌉
// needed to host the replicas, which fill slots first-fit in topological
// order.
type HPA struct {
	cfg  HPAConfig
	hist [][]hpaRec // per operator, by time
}

// NewHPA returns the rule or an error for a bad configuration.
func NewHPA(cfg HPAConfig) (*HPA, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &HPA{cfg: cfg}, nil
}

// Name implements Planner.
func (h *HPA) Name() string { return "hpa" }

// requestCPU attributes worker w's request CPU to its operators: the
// worker's measured load beyond its executions, LoadUS − Σ_o N·τ̄, split
// over operators by the requests they sent (Σ of their out-edge rates).
// All 0 when the worker reports no load or sent nothing.
func requestCPU(app *App, w *WorkerObs) []float64 {
	out := make([]float64, len(app.Operators))
	if w.LoadUS <= 0 {
		return out
	}
	var exec, all float64
	for k := range app.Operators {
		exec += at(w.Exec, k) * at(w.ExecUS, k)
	}
	for e, ed := range app.Edges {
		r := at(w.EdgeRate, e)
		all += r
		out[ed.From] += r
	}
	if all <= 0 || w.LoadUS <= exec {
		clear(out)
		return out
	}
	for o := range out {
		out[o] *= (w.LoadUS - exec) / all
	}
	return out
}

// Reset implements Planner.
func (h *HPA) Reset() { h.hist = nil }

// Plan implements Planner.
func (h *HPA) Plan(now float64, ob Observation) (Plan, error) {
	if !finite(now) {
		return Plan{}, invalidf("time %v", now)
	}
	if err := ob.Validate(); err != nil {
		return Plan{}, err
	}
	app := &ob.App
	nOps := len(app.Operators)
	if len(h.hist) != nOps {
		h.hist = make([][]hpaRec, nOps)
	}
	d := Derive(&ob)
	reqCPU := make([][]float64, len(ob.Workers))
	for i := range ob.Workers {
		reqCPU[i] = requestCPU(app, &ob.Workers[i])
	}
	var scores []Score
	par := make([]int, nOps)
	for o := range nOps {
		cur := 1
		if ob.Parallelism != nil && ob.Parallelism[o] > 0 {
			cur = ob.Parallelism[o]
		}
		var work float64
		for i, w := range ob.Workers {
			work += at(w.Exec, o)*at(w.ExecUS, o) + reqCPU[i][o]
		}
		u := work / (float64(cur) * h.cfg.slotUS())
		ratio := u / h.cfg.Target
		desired := cur
		if math.Abs(ratio-1) > h.cfg.Tolerance {
			desired = int(math.Ceil(float64(cur)*ratio - 1e-9))
		}
		desired = min(h.cfg.MaxReplicas, max(h.cfg.MinReplicas, desired))
		recs := h.hist[o][:0:0]
		for _, r := range h.hist[o] {
			if r.t > now-h.cfg.WindowS && r.t < now {
				recs = append(recs, r)
			}
		}
		recs = append(recs, hpaRec{now, desired})
		h.hist[o] = recs
		final := desired
		if desired < cur {
			top := desired
			for _, r := range recs {
				top = max(top, r.desired)
			}
			final = min(cur, top)
		}
		par[o] = final
		scores = append(scores, score("utilization", o, -1, u), score("desired", o, -1, float64(desired)))
	}
	n := min(h.cfg.slotWorkers(par), h.cfg.MaxWorkers)
	counts := slotFirstFit(app.TopoOrder(), par, n, h.cfg.Slots)
	return slotPlan(h.Name(), now, &ob, d, h.cfg.SlotConfig, countShares(counts, par), par, scores), nil
}
