package calibrate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"streamscale/env"
)

// goodPlan is a plan Validate accepts (the command's defaults on pred).
func goodPlan() Plan {
	return Plan{Profile: "pred", Rate: 3000, Interval: 250 * time.Millisecond, Duration: 10 * time.Second, CPUScale: 0.01, HighMC: 10000, LowMC: 500,
		Seed: 1, ServiceInputs: 3000}
}

// TestPlanValidate: every field out of range is an error wrapping ErrPlan
// and naming what was wrong; Probe refuses such a plan before it starts
// anything.
func TestPlanValidate(t *testing.T) {
	if err := goodPlan().Validate(); err != nil {
		t.Fatalf("the default plan: %v", err)
	}
	wc := goodPlan()
	wc.Profile, wc.Cost = "wc", &CostProbe{}
	if err := wc.Validate(); err != nil {
		t.Fatalf("a CLASP application with a cost probe: %v", err)
	}
	for _, c := range []struct {
		edit func(*Plan)
		want string
	}{
		{func(p *Plan) { p.Profile = "nope" }, `profile "nope"`},
		{func(p *Plan) { p.Rate = 0 }, "rate 0"},
		{func(p *Plan) { p.Rate = 2e6 }, "rate 2e+06"},
		{func(p *Plan) { p.Interval = time.Millisecond }, "interval 1ms"},
		{func(p *Plan) { p.Duration = time.Second }, "duration 1s"},
		{func(p *Plan) { p.CPUScale = -1 }, "cpu scale -1"},
		{func(p *Plan) { p.HighMC = 100 }, "high 100"},
		{func(p *Plan) { p.LowMC = 20000 }, "low 20000"},
		{func(p *Plan) { p.ServiceInputs = 0 }, "service inputs 0"},
		{func(p *Plan) { p.Profile = "syn" }, "no cost-model probe"},
		{func(p *Plan) { p.Profile, p.Cost, p.HopRates = "syn", &CostProbe{}, []float64{100} }, "hop rates apply to pred and etl"},
		{func(p *Plan) { p.HopRates = []float64{3000} }, "hop rate 3000"},
		{func(p *Plan) { p.HopRates = []float64{100, 100} }, "hop rate 100"},
		{func(p *Plan) { p.HopRates = []float64{-1} }, "hop rate -1"},
		{func(p *Plan) { p.HopRates = make([]float64, 17) }, "17 hop rates"},
	} {
		p := goodPlan()
		c.edit(&p)
		err := p.Validate()
		if err == nil || !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "calibrate: ") {
			t.Errorf("%+v: error %v, want ErrPlan naming %q", p, err, c.want)
		}
		if _, err := Probe(context.Background(), p); !errors.Is(err, ErrPlan) {
			t.Errorf("%+v: Probe ran: %v", p, err)
		}
	}
}

// TestStaticFactory: the spread fit's controller is the registry's
// static:N, a vertical fixed allocation, and refuses a non-positive one.
func TestStaticFactory(t *testing.T) {
	s := static(10000)
	if s.String() != "static:10000" || s.Horizontal() || static(2500.5).String() != "static:2500.5" {
		t.Errorf("spec %q, horizontal %v", s.String(), s.Horizontal())
	}
	if _, err := s.Build(goodPlanConfig(t)); err != nil {
		t.Error(err)
	}
	if _, err := static(0).Build(goodPlanConfig(t)); err == nil {
		t.Error("static:0 built")
	}
}

func goodPlanConfig(t *testing.T) env.Config {
	t.Helper()
	ps, err := probeSetup("pred", 3000, 40)
	if err != nil {
		t.Fatal(err)
	}
	return ps.sc
}
