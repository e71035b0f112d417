package env

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
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
		{Physics{HopMS: -1}, "hop_ms -1"},
		{Physics{HopMS: math.NaN()}, "hop_ms NaN"},
		{Physics{HopMS: 1500}, "hop_ms 1500"},
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

// TestHopLatency: Physics.HopMS adds its latency after every task that
// forwards an event, in both cores. On the fork-join toy (Split → Work →
// Join, Join the sink) every message crosses two hops, so 5 ms per hop
// moves the mean latency by 10 ms. With deterministic physics the hop alone
// turns the fast core's tracer on, which gathers the siblings as the
// reference does (the untraced deterministic fluid carries the join by its
// selectivity only), so there the fast core is checked against the
// reference with hops.
func TestHopLatency(t *testing.T) {
	for _, base := range []Physics{{ServiceCV: 1}, {}} {
		with := base
		with.HopMS = 5
		refPlain, _ := joinLatency(t, joinApp(10, false), PerEvent, base, 20)
		ref, _ := joinLatency(t, joinApp(10, false), PerEvent, with, 20)
		fastPlain, _ := joinLatency(t, joinApp(10, false), Fluid, base, 20)
		fast, _ := joinLatency(t, joinApp(10, false), Fluid, with, 20)
		t.Logf("%+v: reference %.3f → %.3f ms, fast %.3f → %.3f ms with 5 ms hops", base, refPlain, ref, fastPlain, fast)
		if d := ref - refPlain; math.Abs(d-10) > 0.5 {
			t.Errorf("%+v: reference core +%.3f ms with two 5 ms hops, want +10 ± 0.5", base, d)
		}
		if math.Abs(fast-ref) > 0.05*ref {
			t.Errorf("%+v: fast core %.3f ms vs reference %.3f ms with hops, want within 5%%", base, fast, ref)
		}
		if base.Stochastic() {
			if d := fast - fastPlain; math.Abs(d-10) > 0.5 {
				t.Errorf("%+v: fast core +%.3f ms with two 5 ms hops, want +10 ± 0.5", base, d)
			}
		}
	}
}

// TestTopKMatchesSort holds the tracer's p95 selection to a full sort:
// the tracerTop largest samples, ties and repeated values included.
func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	xs := make([]float64, tracerEvents)
	for trial := range 2000 {
		for i := range xs {
			switch trial % 3 {
			case 0:
				xs[i] = r.Float64()
			case 1:
				xs[i] = float64(r.IntN(5)) // many ties
			default:
				xs[i] = -r.ExpFloat64()
			}
		}
		top := topK(xs)
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		if want := sorted[len(sorted)-tracerTop:]; !slices.Equal(top[:], want) {
			t.Fatalf("trial %d: topK %v, sort gives %v", trial, top, want)
		}
	}
}
