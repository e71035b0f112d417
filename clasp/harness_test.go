package clasp_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"streamscale/clasp"
	"streamscale/clasp/internal/harness"
)

// run drives planner p on a harness cluster over the rate trace (one value
// per second) and returns the plans and the cluster.
func run(t *testing.T, p clasp.Planner, app clasp.App, truth clasp.CostModel, trace []float64, noise float64) ([]clasp.Plan, *harness.Cluster) {
	t.Helper()
	c, err := harness.New(app, truth, 42, noise)
	if err != nil {
		t.Fatal(err)
	}
	var plans []clasp.Plan
	ob := c.Step(trace[0])
	for sec, rate := range trace {
		if sec > 0 {
			ob = c.Step(rate)
		}
		plan, err := p.Plan(float64(sec), ob)
		if err != nil {
			t.Fatalf("%s at %d s: %v", p.Name(), sec, err)
		}
		if plan.Changed {
			c.Apply(plan)
		}
		plans = append(plans, plan)
	}
	return plans, c
}

// oneWorkerRate is the input rate one worker carries with the whole app on
// it under the paper's model (every request local).
func oneWorkerRate(app clasp.App) float64 {
	m := clasp.DefaultCostModel()
	d := clasp.Derive(&clasp.Observation{App: app, InputRate: 1, Bandwidth: 1})
	all := make([]float64, len(app.Operators))
	for o := range all {
		all[o] = 1
	}
	return m.Budget / m.Loads(&app, d, [][]float64{all})[0].Total()
}

func ramp(segments ...[2]float64) []float64 { // (rate, seconds)
	var tr []float64
	for _, s := range segments {
		for range int(s[1]) {
			tr = append(tr, s[0])
		}
	}
	return tr
}

// TestCLASPOnHarness: with the planner's model equal to the cluster's (the
// estimator is held at the paper's values), every applied plan's loads are
// the cluster's, every worker stays within Headroom·W, throughput keeps up
// with the input once a plan is in place, a headroom below 1 drains the
// backlog, and CLASP re-plans 2 s after each rate step and holds otherwise.
func TestCLASPOnHarness(t *testing.T) {
	w := clasp.DefaultCostModel().Budget
	for _, name := range clasp.AppNames() {
		for _, headroom := range []float64{1, 0.9} {
			t.Run(fmt.Sprintf("%s/headroom=%g", name, headroom), func(t *testing.T) {
				app, _ := clasp.AppByName(name)
				cfg := clasp.DefaultConfig()
				cfg.Estimator.MinSamples = math.MaxInt32
				cfg.Headroom = headroom
				cfg.DrainS = 0 // plans sized for λ_p alone, so the loads match the rate
				p, err := clasp.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				r1 := oneWorkerRate(app)
				trace := ramp([2]float64{1.5 * r1, 10}, [2]float64{4 * r1, 10}, [2]float64{2 * r1, 10})
				c, _ := harness.New(app, clasp.DefaultCostModel(), 1, 0)
				var changes []int
				for sec, rate := range trace {
					ob := c.Step(rate)
					if sec > 0 && sec%10 != 0 && sec != 11 && ob.Throughput < rate*(1-1e-9) {
						t.Errorf("second %d: throughput %.3f < input %.0f", sec, ob.Throughput, rate)
					}
					plan, err := p.Plan(float64(sec), ob)
					if err != nil {
						t.Fatal(err)
					}
					if !plan.Changed {
						continue
					}
					changes = append(changes, sec)
					c.Apply(plan)
					for i, l := range c.LoadsAt(rate) {
						if math.Abs(l-plan.Workers[i].Load.Total()) > 1e-6*w {
							t.Errorf("second %d worker %d: cluster load %.1f, plan says %.1f", sec, plan.Workers[i].ID, l, plan.Workers[i].Load.Total())
						}
						if l > headroom*w*(1+1e-8) {
							t.Errorf("second %d worker %d: load %.1f over %.1f", sec, plan.Workers[i].ID, l, headroom*w)
						}
					}
				}
				if want := []int{0, 11, 21}; !reflect.DeepEqual(changes, want) {
					t.Errorf("re-planned at %v, want %v", changes, want)
				}
				if headroom < 1 && c.Backlog() > 1e-6 {
					t.Errorf("backlog %.1f left with 10%% headroom", c.Backlog())
				}
			})
		}
	}
}

// TestCLASPAdaptsToWrongModel: the cluster's true budget is 20% below the
// planner's assumption. Plans overload it, throughput lags, the lag trigger
// fires, the estimator learns from the saturated bottleneck, and CLASP adds
// workers until throughput is within the lag tolerance of the input.
func TestCLASPAdaptsToWrongModel(t *testing.T) {
	truth := clasp.DefaultCostModel()
	truth.Budget *= 0.8
	p, _ := clasp.New(clasp.DefaultConfig())
	trace := ramp([2]float64{6000, 40})
	c, _ := harness.New(clasp.PL(), truth, 1, 0)
	var first, last clasp.Plan
	var ob clasp.Observation
	for sec, rate := range trace {
		ob = c.Step(rate)
		plan, err := p.Plan(float64(sec), ob)
		if err != nil {
			t.Fatal(err)
		}
		if sec == 0 {
			first = plan
		}
		if plan.Changed {
			c.Apply(plan)
			last = plan
		}
	}
	if ob.Throughput < 0.95*ob.InputRate {
		t.Errorf("after 40 s throughput %.0f/s of %.0f/s", ob.Throughput, ob.InputRate)
	}
	if last.NumWorkers() <= first.NumWorkers() {
		t.Errorf("worker count %d → %d: did not scale up", first.NumWorkers(), last.NumWorkers())
	}
	if w := p.Estimator().Model().Budget; w > 0.9*clasp.DefaultCostModel().Budget {
		t.Errorf("W̄ = %.0f µs/s did not move toward the true %.0f", w, truth.Budget)
	}
}

// planners returns a fresh instance of every planner.
func planners(t *testing.T) []clasp.Planner {
	t.Helper()
	c, err1 := clasp.New(clasp.DefaultConfig())
	ff, err2 := clasp.NewFaaSFlow(clasp.DefaultFaaSFlowConfig())
	z, err3 := clasp.NewZhang24(clasp.DefaultZhang24Config())
	ffsp, err4 := clasp.NewFaaSFlowSP(clasp.DefaultConfig(), clasp.DefaultFaaSFlowConfig())
	zsp, err5 := clasp.NewZhang24SP(clasp.DefaultConfig(), clasp.DefaultZhang24Config())
	ds2, err6 := clasp.NewDS2(clasp.DefaultDS2Config())
	hpa, err7 := clasp.NewHPA(clasp.DefaultHPAConfig())
	h2, _ := clasp.NewHPA(clasp.DefaultHPAConfig())
	g, err8 := clasp.NewGated(h2, clasp.DefaultTriggerConfig(), clasp.DefaultCostModel())
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8); err != nil {
		t.Fatal(err)
	}
	return []clasp.Planner{c, ff, z, ffsp, zsp, ds2, hpa, g}
}

var detTrace = ramp([2]float64{1500, 6}, [2]float64{5000, 12}, [2]float64{2500, 8}, [2]float64{7000, 6})

// TestDeterminism: every planner gives identical plans (bit for bit, as
// printed with %v and by reflect.DeepEqual) on repeated runs, with
// measurement noise from a fixed seed, and after Reset.
func TestDeterminism(t *testing.T) {
	for i, p := range planners(t) {
		t.Run(p.Name(), func(t *testing.T) {
			a, _ := run(t, p, clasp.NWM(), clasp.DefaultCostModel(), detTrace, 0.02)
			b, _ := run(t, planners(t)[i], clasp.NWM(), clasp.DefaultCostModel(), detTrace, 0.02)
			p.Reset()
			c, _ := run(t, p, clasp.NWM(), clasp.DefaultCostModel(), detTrace, 0.02)
			if !reflect.DeepEqual(a, b) || fmt.Sprintf("%v", a) != fmt.Sprintf("%v", b) {
				t.Error("two fresh instances disagree")
			}
			if !reflect.DeepEqual(a, c) {
				t.Error("a Reset instance disagrees with a fresh one")
			}
			if !a[0].Changed {
				t.Error("the first plan holds")
			}
		})
	}
}

// TestBadInputLeavesStateUnchanged: interleaving malformed observations
// (rejected with ErrInvalid) does not change any planner's later plans.
func TestBadInputLeavesStateUnchanged(t *testing.T) {
	bad := []func(*clasp.Observation){
		func(o *clasp.Observation) { o.InputRate = math.NaN() },
		func(o *clasp.Observation) { o.Bandwidth = 0 },
		func(o *clasp.Observation) { o.Parallelism = []int{1} },
		func(o *clasp.Observation) { // shares of operator 0 no longer sum to 1
			o.Workers = append(o.Workers, clasp.WorkerObs{ID: 1 << 20, Share: []float64{0.5, 0, 0, 0, 0}})
		},
		func(o *clasp.Observation) { o.App.Edges = append(o.App.Edges, clasp.Edge{From: 1, To: 0, Ratio: 1}) },
		func(o *clasp.Observation) { o.Workers = append([]clasp.WorkerObs{{ID: -1}}, o.Workers...) },
		func(o *clasp.Observation) {
			o.Workers = append(o.Workers, clasp.WorkerObs{ID: 1 << 21, Exec: []float64{1}})
		},
	}
	for i, p := range planners(t) {
		t.Run(p.Name(), func(t *testing.T) {
			want, _ := run(t, p, clasp.AA(), clasp.DefaultCostModel(), detTrace, 0.01)
			q := planners(t)[i]
			c, _ := harness.New(clasp.AA(), clasp.DefaultCostModel(), 42, 0.01)
			for sec, rate := range detTrace {
				ob := c.Step(rate)
				for k, mut := range bad {
					cp := ob
					cp.App.Edges = append([]clasp.Edge(nil), ob.App.Edges...)
					cp.Workers = append([]clasp.WorkerObs(nil), ob.Workers...)
					mut(&cp)
					if _, err := q.Plan(float64(sec), cp); !errors.Is(err, clasp.ErrInvalid) {
						t.Fatalf("second %d mutation %d: error %v, want ErrInvalid", sec, k, err)
					}
				}
				if _, err := q.Plan(math.Inf(1), ob); !errors.Is(err, clasp.ErrInvalid) {
					t.Fatalf("infinite time: %v", err)
				}
				got, err := q.Plan(float64(sec), ob)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want[sec]) {
					t.Fatalf("second %d: plan differs after rejected input", sec)
				}
				if got.Changed {
					c.Apply(got)
				}
			}
		})
	}
}

// TestWorkerCountGrowsWithRate: CLASP's first plan at a higher input rate
// never uses fewer workers.
func TestWorkerCountGrowsWithRate(t *testing.T) {
	for _, name := range clasp.AppNames() {
		app, _ := clasp.AppByName(name)
		prev := 0
		cfg := clasp.DefaultConfig()
		cfg.MaxWorkers = 10000
		r1 := oneWorkerRate(app)
		for rate := r1 / 4; rate <= 8*r1; rate *= 1.3 {
			p, _ := clasp.New(cfg)
			plan, err := p.Plan(0, clasp.Observation{App: app, InputRate: rate, Bandwidth: 1e8})
			if errors.Is(err, clasp.ErrCapacity) && prev >= 3 {
				break // the destinations alone fill a worker from here on
			}
			if err != nil {
				t.Fatalf("%s at %.0f/s: %v", name, rate, err)
			}
			if plan.NumWorkers() < prev {
				t.Errorf("%s: %d workers at %.0f/s, %d at a lower rate", name, plan.NumWorkers(), rate, prev)
			}
			prev = plan.NumWorkers()
		}
	}
}
