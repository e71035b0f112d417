package env

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestScenarioPhysics(t *testing.T) {
	p, err := ScenarioPhysics(ScenarioPaper)
	if err != nil || p != (Physics{}) || p.Stochastic() {
		t.Errorf("paper: %+v, %v", p, err)
	}
	r, err := ScenarioPhysics(ScenarioRealistic)
	if err != nil || !r.Stochastic() || r.Arrivals != ArrivalsPoisson || r.CFSPeriodMS != 100 {
		t.Errorf("realistic: %+v, %v", r, err)
	}
	if _, err := ScenarioPhysics("moon"); err == nil || !strings.Contains(err.Error(), `unknown scenario "moon"`) {
		t.Errorf("unknown: %v", err)
	}
	if Scenarios()[0] != ScenarioRealistic || !IsScenario("paper") || IsScenario("x") {
		t.Error("Scenarios")
	}
}

func TestPhysicsValidation(t *testing.T) {
	for _, tc := range []struct {
		p    Physics
		want string
	}{
		{Physics{Arrivals: "bursty"}, `arrivals "bursty"`},
		{Physics{Arrivals: ArrivalsGamma}, "arrival_cv 0"},
		{Physics{Arrivals: ArrivalsPoisson, ArrivalCV: 2}, "applies only"},
		{Physics{ServiceCV: -1}, "service_cv -1"},
		{Physics{ServiceCV: math.NaN()}, "service_cv NaN"},
		{Physics{MetricNoise: math.Inf(1)}, "metric_noise +Inf"},
		{Physics{CapacityJitter: -0.1}, "capacity_jitter"},
		{Physics{CFSPeriodMS: 2000}, "cfs_period_ms 2000"},
		{Physics{ActuationDelaySteps: -1}, "actuation_delay_steps -1"},
		{Physics{ActuationDelaySteps: 10}, "actuation_delay_steps 10"},
		{Physics{MetricLagSteps: 12}, "metric_lag_steps 12"},
	} {
		cfg, err := EdgeConfig("pred", 1, diurnal(10))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Physics = tc.p
		_, err = New(cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an invalid-config error containing %q", tc.p, err, tc.want)
		}
	}
}
