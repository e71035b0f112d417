package costfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/clasp"
)

const (
	calOK      = `{"profile": "wc", "cost_probe": {"rate": 4000, "terms": [], "model": {"alpha_us": 1.5, "beta_us": 4, "gamma_us": 900, "budget_us_per_s": 2000000}}}`
	calRefused = `{"profile": "wc", "cost_probe": {"rate": 4000, "refused": "live: cost term refused: [alpha: negative estimate]"}}`
	scenario   = `{"version": 1, "base": "realistic", "cost_model": {"alpha_us": 2, "beta_us": 5, "gamma_us": 0, "budget_us_per_s": 850000, "samples": 6}}`
	legacy     = `{"profile": "pred", "cost_model": {"model": {"Alpha": 246, "Beta": 1940, "Gamma": 127500, "Budget": 2870000}, "samples": [3, 14, 11]}}`
)

// TestParse: both files' models decode; a file without one, a refused
// probe, the earlier regression estimate and every bad value are errors
// that say what was wrong.
func TestParse(t *testing.T) {
	m, kind, err := Parse([]byte(calOK))
	if err != nil || m != (Model{1.5, 4, 900, 2e6}) || kind != "calibration.json cost_probe" {
		t.Errorf("calibration: %+v %q %v", m, kind, err)
	}
	m, kind, err = Parse([]byte(scenario))
	if err != nil || m != (Model{2, 5, 0, 850000}) || kind != "scenario.json cost_model" {
		t.Errorf("scenario: %+v %q %v", m, kind, err)
	}
	for name, c := range map[string]struct {
		in, want string
		noModel  bool
	}{
		"no model":       {`{"profile": "pred"}`, "neither cost_probe.model", true},
		"refused":        {calRefused, "alpha: negative estimate", true},
		"legacy":         {legacy, "regression probe", true},
		"null probe":     {`{"cost_probe": {"model": null}}`, "the probe wrote none", true},
		"negative alpha": {strings.Replace(calOK, `"alpha_us": 1.5`, `"alpha_us": -1.5`, 1), "alpha_us -1.5, want ≥ 0", false},
		"zero budget":    {strings.Replace(scenario, `850000`, `0`, 1), "budget_us_per_s 0, want > 0", false},
		"huge gamma":     {strings.Replace(scenario, `"gamma_us": 0`, `"gamma_us": 1e300`, 1), "gamma_us 1e+300, want finite", false},
		"missing beta":   {`{"cost_model": {"alpha_us": 2, "gamma_us": 0, "budget_us_per_s": 1}}`, "beta_us missing", false},
		"unknown field":  {`{"cost_model": {"alpha_us": 2, "beta_us": 1, "gamma_us": 0, "budget_us_per_s": 1, "delta_us": 3}}`, "unknown field", false},
		"string value":   {`{"cost_model": {"alpha_us": "2"}}`, "cost_model", false},
		"not an object":  {`[1, 2]`, "not a JSON object", false},
		"null":           {`null`, "not a JSON object", false},
		"trailing data":  {calOK + ` {}`, "data after", false},
		"empty":          {``, "not a JSON object", false},
	} {
		_, _, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrNoModel) != c.noModel {
			t.Errorf("%s: error %v, want one containing %q (no model: %v)", name, err, c.want, c.noModel)
		}
	}
}

// TestLoad: a missing file names itself; a good one records its source.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "nope.json"), os.ReadFile); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(dir, "calibration.json")
	if err := os.WriteFile(p, []byte(calRefused), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, os.ReadFile); !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), p) {
		t.Errorf("refused probe: %v", err)
	}
	if err := os.WriteFile(p, []byte(calOK), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := Load(p, os.ReadFile)
	if err != nil || u.AlphaUS != 1.5 || u.Source != p+" (calibration.json cost_probe)" {
		t.Errorf("load: %+v %v", u, err)
	}
	if Paper().Model != FromClasp(clasp.DefaultCostModel()) {
		t.Errorf("paper %+v", Paper())
	}
}

// TestMethods: the same planners as clasp.Methods, by name and in order;
// every CLASP planner starts from the file's model (its estimator's
// fallback), a zero term included, and a bad model is refused.
func TestMethods(t *testing.T) {
	model := Model{AlphaUS: 1.5, BetaUS: 4, GammaUS: 0, BudgetUSPerS: 2e6}
	ms, err := Methods(4, model)
	if err != nil {
		t.Fatal(err)
	}
	ref := clasp.Methods(4, model.Clasp())
	if len(ms) != len(ref) {
		t.Fatalf("%d methods, want %d", len(ms), len(ref))
	}
	claspLike := 0
	for i, m := range ms {
		p, err := m.New()
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		q, err := ref[i].New()
		if err != nil {
			t.Fatal(err)
		}
		if m.Name != ref[i].Name || p.Name() != q.Name() {
			t.Errorf("method %d: %s (%s), want %s (%s)", i, m.Name, p.Name(), ref[i].Name, q.Name())
		}
		if c, ok := p.(*clasp.CLASP); ok {
			claspLike++
			if got := c.Estimator().Model(); got != model.Clasp() {
				t.Errorf("%s starts from %+v, want %+v", m.Name, got, model.Clasp())
			}
		}
	}
	if claspLike != 5 {
		t.Errorf("%d CLASP planners, want 5 (clasp, faasflow-sp, zhang24-sp, clasp-paper, clasp-h90)", claspLike)
	}
	if _, err := Methods(4, Model{AlphaUS: -1, BudgetUSPerS: 1}); err == nil {
		t.Error("a negative α accepted")
	}
}

// FuzzParse: no input panics, and an accepted model passes Check.
func FuzzParse(f *testing.F) {
	for _, s := range []string{calOK, calRefused, scenario, legacy, `{}`, `null`, `{"cost_model": {}}`, `{"cost_probe": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, kind, err := Parse(data)
		if err != nil {
			return
		}
		if cerr := m.Check(); cerr != nil || kind == "" {
			t.Fatalf("accepted %+v (%q): %v", m, kind, cerr)
		}
	})
}
