// Package costfile reads CLASP's cost model of chained requests (paper
// Eq. 1: α, β, γ in µs and the budget W in µs/s, clasp.CostModel) from the
// files `eval calibrate` writes, and builds the horizontal planners with
// it, for the commands' -cost-model flag (eval live, eval liveclasp, serve
// planner).
//
// Two files are read: calibration.json, whose cost_probe.model is set when
// the probe accepted every term (eval/calibrate.ProbeCosts), and scenario.json,
// whose cost_model is the same model. The package does no I/O: callers
// pass the bytes. Parse is strict: unknown fields in the model, a missing
// or non-finite value, a negative α, β or γ or a budget that is not
// positive are errors naming the field, and nothing panics on any input.
// Nothing here is concurrent or random.
package costfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"streamscale/clasp"
)

// Model is a cost model as the files write it (the same fields as
// env.ScenarioCostModel), and as summary.json records the one a run used.
type Model struct {
	AlphaUS      float64 `json:"alpha_us"`
	BetaUS       float64 `json:"beta_us"`
	GammaUS      float64 `json:"gamma_us"`
	BudgetUSPerS float64 `json:"budget_us_per_s"`
}

// Used is the cost model a run used and where it came from.
type Used struct {
	Model
	// Source is "paper" (clasp.DefaultCostModel, the CLASP paper's §4.1
	// values) or "FILE (calibration.json cost_probe)" / "FILE
	// (scenario.json cost_model)".
	Source string `json:"source"`
}

// Paper is the default: the CLASP paper's model.
func Paper() Used {
	return Used{Model: FromClasp(clasp.DefaultCostModel()), Source: "paper (clasp.DefaultCostModel)"}
}

// FromClasp converts a clasp.CostModel.
func FromClasp(m clasp.CostModel) Model {
	return Model{AlphaUS: m.Alpha, BetaUS: m.Beta, GammaUS: m.Gamma, BudgetUSPerS: m.Budget}
}

// Clasp converts to a clasp.CostModel.
func (m Model) Clasp() clasp.CostModel {
	return clasp.CostModel{Alpha: m.AlphaUS, Beta: m.BetaUS, Gamma: m.GammaUS, Budget: m.BudgetUSPerS}
}

// ErrNoModel is wrapped when a file decodes but holds no cost model.
var ErrNoModel = errors.New("costfile: no cost model")

// Check reports a model that is not usable: every value finite, α, β, γ ≥
// 0 and W > 0 (CLASP's own check), the values bounded (α, β, γ ≤ 10⁹ µs,
// W ≤ 10¹² µs/s).
func (m Model) Check() error {
	for _, f := range []struct {
		name string
		v    float64
		pos  bool
		max  float64
	}{{"alpha_us", m.AlphaUS, false, 1e9}, {"beta_us", m.BetaUS, false, 1e9}, {"gamma_us", m.GammaUS, false, 1e9}, {"budget_us_per_s", m.BudgetUSPerS, true, 1e12}} {
		switch {
		case math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v > f.max:
			return fmt.Errorf("costfile: %s %v, want finite and ≤ %g", f.name, f.v, f.max)
		case f.pos && !(f.v > 0):
			return fmt.Errorf("costfile: %s %v, want > 0", f.name, f.v)
		case !f.pos && f.v < 0:
			return fmt.Errorf("costfile: %s %v, want ≥ 0", f.name, f.v)
		}
	}
	return nil
}

// Parse returns the cost model of a calibration.json (cost_probe.model)
// or a scenario.json (cost_model) and which of the two it was. A file
// without one is an error wrapping ErrNoModel; so is a calibration.json
// holding only the earlier regression probe's estimate (cost_model with a
// model, not alpha_us).
func Parse(data []byte) (Model, string, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil {
		return Model{}, "", fmt.Errorf("costfile: not a JSON object: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Model{}, "", errors.New("costfile: data after the JSON object")
	}
	if top == nil {
		return Model{}, "", errors.New("costfile: not a JSON object: null")
	}
	if raw, ok := top["cost_probe"]; ok && !isNull(raw) {
		var probe struct {
			Model   json.RawMessage `json:"model"`
			Refused string          `json:"refused"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return Model{}, "", fmt.Errorf("costfile: cost_probe: %w", err)
		}
		if isNull(probe.Model) {
			why := "the probe wrote none"
			if probe.Refused != "" {
				why = "the probe refused it: " + probe.Refused
			}
			return Model{}, "", fmt.Errorf("%w in cost_probe (%s)", ErrNoModel, why)
		}
		m, err := strictModel(probe.Model)
		if err != nil {
			return Model{}, "", fmt.Errorf("costfile: cost_probe.model: %w", err)
		}
		return m, "calibration.json cost_probe", nil
	}
	raw, ok := top["cost_model"]
	if !ok || isNull(raw) {
		return Model{}, "", fmt.Errorf("%w: neither cost_probe.model (calibration.json) nor cost_model (scenario.json); eval calibrate writes one only when the probe accepted every term", ErrNoModel)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Model{}, "", fmt.Errorf("costfile: cost_model: %w", err)
	}
	if _, legacy := probe["model"]; legacy {
		return Model{}, "", fmt.Errorf("%w: cost_model is the earlier regression probe's estimate (not identifiable, never a model to use); re-run eval calibrate", ErrNoModel)
	}
	// scenario.json's cost_model also records its samples.
	delete(probe, "samples")
	b, _ := json.Marshal(probe) // re-encoding a decoded map cannot fail
	m, err := strictModel(b)
	if err != nil {
		return Model{}, "", fmt.Errorf("costfile: cost_model: %w", err)
	}
	return m, "scenario.json cost_model", nil
}

// Load parses the file at path, read with read (os.ReadFile in the
// commands), and returns its model with its source.
func Load(path string, read func(string) ([]byte, error)) (Used, error) {
	data, err := read(path)
	if err != nil {
		return Used{}, fmt.Errorf("costfile: %w", err)
	}
	m, kind, err := Parse(data)
	if err != nil {
		return Used{}, fmt.Errorf("%s: %w", path, err)
	}
	return Used{Model: m, Source: fmt.Sprintf("%s (%s)", path, kind)}, nil
}

func strictModel(raw json.RawMessage) (Model, error) {
	var m struct {
		AlphaUS      *float64 `json:"alpha_us"`
		BetaUS       *float64 `json:"beta_us"`
		GammaUS      *float64 `json:"gamma_us"`
		BudgetUSPerS *float64 `json:"budget_us_per_s"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Model{}, err
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"alpha_us", m.AlphaUS}, {"beta_us", m.BetaUS}, {"gamma_us", m.GammaUS}, {"budget_us_per_s", m.BudgetUSPerS}} {
		if f.v == nil {
			return Model{}, fmt.Errorf("%s missing", f.name)
		}
	}
	out := Model{AlphaUS: *m.AlphaUS, BetaUS: *m.BetaUS, GammaUS: *m.GammaUS, BudgetUSPerS: *m.BudgetUSPerS}
	return out, out.Check()
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" }

// Methods returns clasp.Methods(maxWorkers, model) with every CLASP
// planner (clasp, clasp-paper, clasp-h90 and the -SP variants, which pack
// with CLASP) started from model: its estimator's Fallback (the model
// used until enough saturated samples arrive) is model and its Initial
// (the RLS start) too, a zero α, β or γ started at 10⁻³ µs (the
// estimator's scaling needs positive starts). The baselines without a
// capacity model of their own take model for the triggers' saturation
// check, as clasp.Methods gives it. The configurations are clasp.Methods'
// (a test holds them together).
func Methods(maxWorkers int, model Model) ([]clasp.Method, error) {
	if err := model.Check(); err != nil {
		return nil, err
	}
	m := model.Clasp()
	c := clasp.DefaultConfig()
	c.MaxWorkers = maxWorkers
	c.Estimator.Fallback = m
	c.Estimator.Initial = clasp.CostModel{Alpha: max(m.Alpha, 1e-3), Beta: max(m.Beta, 1e-3), Gamma: max(m.Gamma, 1e-3), Budget: m.Budget}
	ff := clasp.DefaultFaaSFlowConfig()
	ff.MaxWorkers = maxWorkers
	zc := clasp.DefaultZhang24Config()
	zc.MaxWorkers = maxWorkers
	own := map[string]func() (clasp.Planner, error){ // only indexed
		"clasp":       func() (clasp.Planner, error) { return clasp.New(c) },
		"faasflow-sp": func() (clasp.Planner, error) { return clasp.NewFaaSFlowSP(c, ff) },
		"zhang24-sp":  func() (clasp.Planner, error) { return clasp.NewZhang24SP(c, zc) },
		"clasp-paper": func() (clasp.Planner, error) {
			cp := c
			cp.Propagate, cp.DrainS = false, 0
			return clasp.NewNamed(cp, "clasp-paper")
		},
		"clasp-h90": func() (clasp.Planner, error) {
			ch := c
			ch.Headroom = 0.9
			return clasp.NewNamed(ch, "clasp-h90")
		},
	}
	ms := clasp.Methods(maxWorkers, m)
	for i := range ms {
		if f, ok := own[ms[i].Name]; ok {
			ms[i].New = f
		}
	}
	return ms, nil
}
