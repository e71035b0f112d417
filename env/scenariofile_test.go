package env

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestScenarioFileBaseOnly: a file with only the version and the base is
// exactly the preset, down to the trajectory bytes.
func TestScenarioFileBaseOnly(t *testing.T) {
	for _, base := range Scenarios() {
		s, err := ParseScenario([]byte(`{"version":1,"base":"` + base + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ScenarioPhysics(base)
		if s.Physics != want || s.Demand != nil || s.CostModel != nil {
			t.Fatalf("%s: %+v, want the preset %+v", base, s, want)
		}
		run := func(ph Physics, apply *Scenario) [32]byte {
			cfg, err := EdgeConfig("pred", 7, diurnal(40))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Physics = ph
			if apply != nil {
				if err := apply.Apply(&cfg); err != nil {
					t.Fatal(err)
				}
			}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return trajectory(t, e, 3, 40)
		}
		if run(want, nil) != run(Physics{ServiceCV: 9}, &s) {
			t.Errorf("%s: the file's trajectory differs from the preset's", base)
		}
	}
}

// TestScenarioFileRoundTrip: write → parse gives the same scenario, for
// overrides that set fields to zero, to non-default values and of every
// kind, with a demand and a cost model.
func TestScenarioFileRoundTrip(t *testing.T) {
	real, _ := ScenarioPhysics(ScenarioRealistic)
	p := real
	p.MetricNoise, p.MetricLagSteps, p.Arrivals = 0, 0, ArrivalsUniform
	p.ServiceCV, p.CFSThreads, p.ActuationDelaySteps = 0.37, 2, 0
	gamma := Physics{Arrivals: ArrivalsGamma, ArrivalCV: 2.5, CFSPeriodMS: 50}
	hops := real
	hops.HopMS, hops.HopSpread, hops.HopsEndToEnd = 7.5, 0.75, true
	var err error
	if hops.HopMSByTask, err = NewTaskHops(map[string]float64{"SenMLParse": 3.125, "Annotate": 0, "Join": 20.98}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Scenario{
		{Base: ScenarioRealistic, Physics: p, Comment: "c", Notes: map[string]string{"service_cv": "measured", "demand": "d"},
			Demand:    &ScenarioDemand{Profile: "pred", CPUScale: 0.01, Tasks: []MeasuredDemand{{Task: "SenMLParse", CPUUSPerEvent: 4.1, Comment: "x"}, {Task: "MQTTPublish", CPUUSPerEvent: 0.25}}},
			CostModel: &ScenarioCostModel{AlphaUS: 1, BetaUS: 2, GammaUS: 3, BudgetUSPerS: 9e5, Samples: 4}},
		{Base: ScenarioPaper, Physics: gamma},
		{Base: ScenarioPaper, Physics: real},
		{Base: ScenarioRealistic, Physics: Physics{}},
		{Base: ScenarioRealistic, Physics: hops},
	} {
		b, err := s.MarshalFile()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseScenario(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("round trip of\n%s\ngave %+v, want %+v", b, got, s)
		}
	}
}

func TestScenarioFileErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{``, "EOF"},
		{`{"base":"realistic"}`, "version missing"},
		{`{"version":2,"base":"realistic"}`, "version 2, want 1"},
		{`{"version":1}`, `base ""`},
		{`{"version":1,"base":"moon"}`, `base "moon"`},
		{`{"version":1,"base":"paper","extra":1}`, `unknown field "extra"`},
		{`{"version":1,"base":"paper"} {}`, "data after"},
		{`{"version":1,"base":"paper","physics":{"service_cv":-1}}`, "service_cv -1"},
		{`{"version":1,"base":"paper","physics":{"service_cv":"x"}}`, "service_cv"},
		{`{"version":1,"base":"paper","physics":{"servicecv":1}}`, `unknown field "servicecv"`},
		{`{"version":1,"base":"paper","physics":{"arrivals":"gamma"}}`, "arrival_cv 0"},
		{`{"version":1,"base":"paper","physics":{"actuation_delay_steps":-2}}`, "actuation_delay_steps -2"},
		{`{"version":1,"base":"paper","notes":{"bogus":"x"}}`, `notes key "bogus"`},
		{`{"version":1,"base":"paper","demand":{"profile":"x","cpu_scale":1,"tasks":[]}}`, "demand profile"},
		{`{"version":1,"base":"paper","demand":{"profile":"pred","cpu_scale":0,"tasks":[]}}`, "cpu_scale 0"},
		{`{"version":1,"base":"paper","demand":{"profile":"pred","cpu_scale":1,"tasks":[]}}`, "no tasks"},
		{`{"version":1,"base":"paper","demand":{"profile":"pred","cpu_scale":1,"tasks":[{"task":"Join","cpu_us_per_event":1}]}}`, `task "Join" is not a task of pred`},
		{`{"version":1,"base":"paper","demand":{"profile":"pred","cpu_scale":1,"tasks":[{"task":"SenMLParse","cpu_us_per_event":0}]}}`, "cpu_us_per_event 0"},
		{`{"version":1,"base":"paper","demand":{"profile":"pred","cpu_scale":1,"tasks":[{"task":"SenMLParse","cpu_us_per_event":1},{"task":"SenMLParse","cpu_us_per_event":1}]}}`, "given twice"},
		{`{"version":1,"base":"paper","demand":{"profile":"pred","cpu_scale":1,"tasks":[{"task":"SenMLParse","cpu_us_per_event":1,"x":1}]}}`, `unknown field "x"`},
		{`{"version":1,"base":"paper","cost_model":{"alpha_us":-1,"beta_us":0,"gamma_us":0,"budget_us_per_s":1}}`, "alpha_us -1"},
		{`{"version":1,"base":"paper","cost_model":{"alpha_us":0,"beta_us":0,"gamma_us":0,"budget_us_per_s":0}}`, "budget_us_per_s 0"},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":-1}}}`, `hop_ms_by_task task "Join": -1 ms`},
		{`{"version":1,"base":"paper","physics":{"hop_spread":-0.5}}`, `hop_spread -0.5, want a number in [0, 2]`},
		{`{"version":1,"base":"paper","physics":{"hop_spread":2.5}}`, `hop_spread 2.5`},
		{`{"version":1,"base":"paper","physics":{"hop_spread":"x"}}`, `hop_spread`},
		{`{"version":1,"base":"paper","physics":{"hops_end_to_end":1}}`, `hops_end_to_end`},
		{`{"version":1,"base":"paper","physics":{"step_seconds":-0.25}}`, `step_seconds -0.25, want a number in [0.01, 60]`},
		{`{"version":1,"base":"paper","physics":{"step_seconds":0.001}}`, `step_seconds 0.001`},
		{`{"version":1,"base":"paper","physics":{"step_seconds":61}}`, `step_seconds 61`},
		{`{"version":1,"base":"paper","physics":{"step_seconds":"1"}}`, `step_seconds`},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":1001}}}`, `hop_ms_by_task task "Join": 1001 ms`},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":1e400}}}`, `task "Join": 1e400, want a finite number`},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":"3"}}}`, `task "Join": 3, want a number`},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":1,"Join":2}}}`, `task "Join" given twice`},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"":2}}}`, "empty task name"},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":[1]}}`, "want an object"},
		{`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":{}}}}`, `task "Join"`},
	} {
		_, err := ParseScenario([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.file, err, tc.want)
		}
	}
	if _, err := ParseScenario(make([]byte, MaxScenarioFile+1)); err == nil {
		t.Error("an oversized file was accepted")
	}
}

func TestResolveScenario(t *testing.T) {
	files := map[string]string{"a.json": `{"version":1,"base":"paper","physics":{"service_cv":0.5}}`, "bad.json": `{"version":1}`}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, errors.New("no such file")
	}
	s, err := ResolveScenario("paper", nil)
	if err != nil || s.Name != "paper" || s.Physics != (Physics{}) {
		t.Errorf("preset: %+v, %v", s, err)
	}
	s, err = ResolveScenario("a.json", read)
	if err != nil || s.Name != "a.json" || s.Physics != (Physics{ServiceCV: 0.5}) {
		t.Errorf("file: %+v, %v", s, err)
	}
	for arg, want := range map[string]string{"moon": "neither a preset (realistic or paper) nor a readable", "bad.json": "scenario file bad.json: ", "": "not a preset"} {
		if _, err := ResolveScenario(arg, read); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", arg, err, want)
		}
	}
}

// TestScenarioDemandApply: the mapping h = u·10⁻⁶·(MIPS per core)/scale
// gives every listed task the same service time at every server, and a
// configuration of another profile is refused unchanged.
func TestScenarioDemandApply(t *testing.T) {
	s := Scenario{Base: ScenarioPaper, Demand: &ScenarioDemand{Profile: "pred", CPUScale: 0.01,
		Tasks: []MeasuredDemand{{Task: "SenMLParse", CPUUSPerEvent: 4}, {Task: "ErrorEstimate", CPUUSPerEvent: 0.2}}}}
	for _, seed := range []uint64{1, 2, 3} {
		cfg, err := EdgeConfig("pred", seed, diurnal(5))
		if err != nil {
			t.Fatal(err)
		}
		before := cfg.App.Tasks[1]
		if err := s.Apply(&cfg); err != nil {
			t.Fatal(err)
		}
		for k, want := range map[int]float64{0: 4e-6, 4: 0.2e-6} {
			sv := cfg.Servers[cfg.Placement[k]]
			// Service time at 1000 scenario mc: h / (MIPS per core).
			got := cfg.App.Tasks[k].MIPSPerEvent / (sv.MIPS / (sv.CPU / 1000))
			if math.Abs(got-want/0.01) > 1e-12 {
				t.Errorf("seed %d task %d: %g s per event at one core, want %g", seed, k, got, want/0.01)
			}
		}
		if cfg.App.Tasks[1] != before {
			t.Error("an unlisted task's demand changed")
		}
		if p := PRED(); p.Tasks[0].MIPSPerEvent != 0.27 {
			t.Error("the catalogue was modified")
		}
	}
	cfg, _ := EdgeConfig("etl", 1, diurnal(5))
	before := cfg.App.Tasks[0]
	if err := s.Apply(&cfg); err == nil || cfg.App.Tasks[0] != before {
		t.Errorf("etl: %v", err)
	}
}

// FuzzParseScenario: no input panics, and whatever parses writes back to
// a file that parses to the same scenario.
func FuzzParseScenario(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"base":"realistic"}`,
		`{"version":1,"base":"paper","physics":{"arrivals":"gamma","arrival_cv":2,"cfs_period_ms":100}}`,
		`{"version":1,"base":"realistic","physics":{"metric_noise":0},"notes":{"metric_noise":"x"},"demand":{"profile":"etl","cpu_scale":0.01,"tasks":[{"task":"Join","cpu_us_per_event":0.2}]},"cost_model":{"alpha_us":1,"beta_us":2,"gamma_us":3,"budget_us_per_s":5,"samples":1}}`,
		`{"version":1,"base":"paper","physics":null}`,
		`[]`, `{"version":1e400}`, `{"version":1,"base":"paper","notes":{}}`,
		`{"version":1,"base":"realistic","physics":{"hop_ms":7.7,"hop_ms_by_task":{"SenMLParse":19.4,"RangeFilter":0.82,"Join":20.98}}}`,
		`{"version":1,"base":"paper","physics":{"hop_ms_by_task":null}}`, `{"version":1,"base":"paper","physics":{"hop_ms_by_task":{}}}`,
		`{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"a\u0000":1,"\u00e9":2e-300}}}`,
		`{"version":1,"base":"realistic","physics":{"hop_ms":7.7,"hop_spread":1,"hops_end_to_end":true,"hop_ms_by_task":{"SenMLParse":19.4}}}`,
		`{"version":1,"base":"paper","physics":{"hop_spread":0,"hops_end_to_end":false}}`, `{"version":1,"base":"paper","physics":{"hop_spread":1e-320}}`,
		`{"version":1,"base":"realistic","physics":{"hop_curve":[{"rate":300,"hop_ms_by_task":{"Join":19.2},"wait_ms_by_task":{"Annotate":19.2},"hop_spread":0.85},{"rate":3000,"hop_ms_by_task":{"Join":7.7},"wait_ms_by_task":{"Annotate":7.7},"hop_spread":1.45}]}}`,
		`{"version":1,"base":"realistic","physics":{"step_seconds":0.25}}`, `{"version":1,"base":"paper","physics":{"step_seconds":5e-324}}`,
		`{"version":1,"base":"realistic","physics":{"hop_curve":[{"rate":300,"hop_ms_by_task":{"Join":19.2},"wait_ms_by_task":{"Annotate":19.2},"queue_empty_by_task":{"Annotate":0.5}}]}}`,
		`{"version":1,"base":"paper","physics":{"hop_curve":null}}`, `{"version":1,"base":"paper","physics":{"hop_curve":[{"rate":1,"hop_ms_by_task":{"a":1}},{"rate":1e300,"hop_ms_by_task":{"a":0}}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario(data)
		if err != nil {
			return
		}
		b, err := s.MarshalFile()
		if err != nil {
			t.Fatalf("parsed but does not write: %v", err)
		}
		got, err := ParseScenario(b)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip: %v\n%s\n%+v\n%+v", err, b, got, s)
		}
	})
}
