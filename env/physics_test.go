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
		// Per task (HopMSByTask): 1 ms after Split and 7 ms after Work
		// override the 5 ms default, +8 ms; Work alone at 2 ms keeps 5 ms
		// after Split, +7 ms; listed at 0 with the default 0, +0 (and the
		// tracer stays off for deterministic physics: no comparison of
		// the cores there, as without hops).
		for _, c := range []struct {
			hop  float64
			by   map[string]float64
			want float64
		}{{5, map[string]float64{"Split": 1, "Work": 7}, 8}, {5, map[string]float64{"Work": 2}, 7}, {0, map[string]float64{"Split": 0}, 0}} {
			per := base
			per.HopMS = c.hop
			var err error
			if per.HopMSByTask, err = NewTaskHops(c.by); err != nil {
				t.Fatal(err)
			}
			ref, _ := joinLatency(t, joinApp(10, false), PerEvent, per, 20)
			fast, _ := joinLatency(t, joinApp(10, false), Fluid, per, 20)
			t.Logf("%+v, hop %v ms, by task %v: reference %.3f ms, fast %.3f ms", base, c.hop, c.by, ref, fast)
			if d := ref - refPlain; math.Abs(d-c.want) > 0.5 {
				t.Errorf("%+v, by task %v: reference core +%.3f ms, want +%v ± 0.5", base, c.by, d, c.want)
			}
			if per.traced() && math.Abs(fast-ref) > 0.05*ref {
				t.Errorf("%+v, by task %v: fast core %.3f ms vs reference %.3f ms, want within 5%%", base, c.by, fast, ref)
			}
			if base.Stochastic() || c.want == 0 {
				if d := fast - fastPlain; math.Abs(d-c.want) > 0.5 {
					t.Errorf("%+v, by task %v: fast core +%.3f ms, want +%v ± 0.5", base, c.by, d, c.want)
				}
			}
		}
	}
}

// TestTaskHopsValue: a TaskHops is a value (equal entries give ==
// tables, whatever the map), resolves to a latency per task in task order
// (unlisted forwarding tasks HopMS, tasks without successors 0), and
// refuses bad entries with an error naming them.
func TestTaskHopsValue(t *testing.T) {
	a, err := NewTaskHops(map[string]float64{"Work": 2, "Split": 0.5})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewTaskHops(map[string]float64{"Split": 0.5, "Work": 2})
	c, _ := NewTaskHops(map[string]float64{"Split": 0.5, "Work": 2.5})
	if a != b || a == c || a.Len() != 2 || (TaskHops{}).Len() != 0 || !(TaskHops{}).IsZero() {
		t.Errorf("equality: %v %v %v", a, b, c)
	}
	if e := a.Entries(); len(e) != 2 || e[0] != (TaskHop{"Split", 0.5}) || e[1] != (TaskHop{"Work", 2}) {
		t.Errorf("entries %v, want sorted by name", e)
	}
	z, _ := NewTaskHops(map[string]float64{"Split": math.Copysign(0, -1)})
	if zb, _ := z.MarshalJSON(); string(zb) != `{"Split":0}` {
		t.Errorf("-0 written as %s", zb)
	}
	got := Physics{HopMS: 3, HopMSByTask: b}.hopSeconds(joinApp(10, false))
	if want := []float64{0.0005, 0.002, 0}; !slices.Equal(got, want) {
		t.Errorf("hopSeconds %v, want %v", got, want)
	}
	if got := (Physics{HopMS: 3}).hopSeconds(joinApp(10, false)); !slices.Equal(got, []float64{0.003, 0.003, 0}) {
		t.Errorf("scalar hopSeconds %v", got)
	}
	for _, tc := range []struct {
		m    map[string]float64
		want string
	}{
		{map[string]float64{"Work": -1}, `task "Work": -1 ms`},
		{map[string]float64{"Work": math.NaN()}, `task "Work": NaN ms`},
		{map[string]float64{"Work": math.Inf(1)}, `task "Work": +Inf ms`},
		{map[string]float64{"Work": 1000.5}, `task "Work": 1000.5 ms`},
		{map[string]float64{"": 1}, "empty task name"},
		{map[string]float64{"W\xffrk": 1}, "not valid UTF-8"},
	} {
		if _, err := NewTaskHops(tc.m); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "env: ") {
			t.Errorf("%v: %v, want an error containing %q", tc.m, err, tc.want)
		}
	}
}

// TestTaskHopsAppCheck: New and Scenario.Apply refuse a per-task hop
// naming a task the application does not have, or one that forwards to no
// task, naming the task and the application; Apply leaves cfg unchanged.
func TestTaskHopsAppCheck(t *testing.T) {
	for name, want := range map[string]string{
		"Nope":        `task "Nope" is not a task of pred`,
		"MQTTPublish": `task "MQTTPublish" of pred forwards to no task`,
	} {
		h, err := NewTaskHops(map[string]float64{name: 1, "SenMLParse": 2})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := EdgeConfig("pred", 1, diurnal(10))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Physics.HopMSByTask = h
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: New: %v, want an invalid-config error containing %q", name, err, want)
		}
		cfg.Physics = Physics{}
		before := cfg.Physics
		if err := (Scenario{Base: ScenarioPaper, Physics: Physics{HopMSByTask: h}}).Apply(&cfg); err == nil || !strings.Contains(err.Error(), want) || cfg.Physics != before {
			t.Errorf("%s: Apply: %v (physics %+v), want an error containing %q and cfg unchanged", name, err, cfg.Physics, want)
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
