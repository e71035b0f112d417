package clasp

import (
	"math"
	"slices"
	"testing"
)

// oneOp is a single-operator app of 400 µs executions.
func oneOp() App {
	return App{Name: "one", Operators: []Operator{{Name: "o", ExecUS: 400, RequestBytes: 100}}}
}

// measuredObs returns an observation of app on one worker holding
// everything, executing exec[o]/s with the nominal execution times and
// sending edge[e] requests/s.
func measuredObs(app App, in, thr float64, exec, edge []float64, par []int) Observation {
	w := WorkerObs{ID: 0, Exec: exec, EdgeRate: edge, ExecUS: make([]float64, len(app.Operators)), Share: make([]float64, len(app.Operators))}
	for o := range app.Operators {
		w.ExecUS[o] = app.Operators[o].ExecUS
		w.Share[o] = 1
	}
	return Observation{App: app, InputRate: in, Throughput: thr, Bandwidth: 1e8, Parallelism: par, Workers: []WorkerObs{w}}
}

// onWorkers spreads every operator of ob evenly over n workers (IDs 0…n−1)
// that report nothing else.
func onWorkers(ob Observation, n int) Observation {
	ob.Workers = nil
	for w := range n {
		sh := make([]float64, len(ob.App.Operators))
		for o := range sh {
			sh[o] = 1 / float64(n)
		}
		ob.Workers = append(ob.Workers, WorkerObs{ID: w, Share: sh})
	}
	return ob
}

// TestFaaSFlowPaperExample is the CLASP paper's own example of FaaSFlow's
// linear extrapolation: one worker delivering 100/s of 500/s asks for 5
// workers; five workers then delivering 250/s (50 each) ask for 10.
func TestFaaSFlowPaperExample(t *testing.T) {
	f, err := NewFaaSFlow(DefaultFaaSFlowConfig())
	if err != nil {
		t.Fatal(err)
	}
	app := oneOp()
	// Nothing to extrapolate from yet: the current count, no prior.
	p, err := f.Plan(0, Observation{App: app, InputRate: 500, Bandwidth: 1e8})
	if err != nil {
		t.Fatal(err)
	}
	if p.NumWorkers() != 1 {
		t.Errorf("before any saturation: %d workers, want 1 (no assumed capacity)", p.NumWorkers())
	}
	ob := onWorkers(Observation{App: app, InputRate: 500, Throughput: 100, Bandwidth: 1e8, Parallelism: []int{10}}, 1)
	if p, _ = f.Plan(1, ob); p.NumWorkers() != 5 {
		t.Errorf("1 worker at 100/s of 500/s: %d workers, want 5", p.NumWorkers())
	}
	ob = onWorkers(Observation{App: app, InputRate: 500, Throughput: 250, Bandwidth: 1e8, Parallelism: []int{50}}, 5)
	if p, _ = f.Plan(2, ob); p.NumWorkers() != 10 {
		t.Errorf("5 workers at 250/s of 500/s: %d workers, want 10 (a running mean would give 7)", p.NumWorkers())
	}
	// Keeping up at a lower rate: the latest saturated T = 50/s extrapolates.
	ob = onWorkers(Observation{App: app, InputRate: 200, Throughput: 200, Bandwidth: 1e8, Parallelism: []int{100}}, 10)
	if p, _ = f.Plan(3, ob); p.NumWorkers() != 4 {
		t.Errorf("10 workers keeping up with 200/s: %d workers, want 200/50 = 4", p.NumWorkers())
	}
	var inst int
	for _, x := range p.Parallelism {
		inst += x
	}
	if inst != 4*DefaultSlots {
		t.Errorf("%d instances, want N·Slots = %d", inst, 4*DefaultSlots)
	}
	f.Reset()
	if p, _ = f.Plan(4, ob); p.NumWorkers() != 10 {
		t.Errorf("after Reset: %d workers, want the current 10", p.NumWorkers())
	}
}

func TestFaaSFlowGroupsHeaviestEdge(t *testing.T) {
	f, _ := NewFaaSFlow(DefaultFaaSFlowConfig())
	app := NWM()
	// One worker delivering 3,000/s of 9,000/s: 3 workers.
	ob := onWorkers(Observation{App: app, InputRate: 9000, Throughput: 3000, Bandwidth: 1e8}, 1)
	p, err := f.Plan(0, ob)
	if err != nil {
		t.Fatal(err)
	}
	if p.NumWorkers() < 2 {
		t.Fatalf("%d workers; the example needs several", p.NumWorkers())
	}
	// Heaviest edges: split→success-filter and split→failure-filter
	// (9,000/s each), parse→split. Each pair shares a worker.
	d := p.Explain.Demand
	heaviest := 0
	for e := range app.Edges {
		if d.Edge[e] > d.Edge[heaviest] {
			heaviest = e
		}
	}
	u, v := app.Edges[heaviest].From, app.Edges[heaviest].To
	shared := false
	for _, w := range p.Workers {
		if w.Share[u] > 0 && w.Share[v] > 0 {
			shared = true
		}
	}
	if !shared {
		t.Errorf("heaviest edge %s→%s split across workers: %+v", app.Operators[u].Name, app.Operators[v].Name, p.Workers)
	}
	checkSlots(t, p, DefaultSlots)
}

// checkSlots asserts every operator's shares sum to 1 and no worker holds
// more instances than slots.
func checkSlots(t *testing.T, p Plan, slots int) {
	t.Helper()
	for o := range p.Parallelism {
		var s float64
		for _, w := range p.Workers {
			s += w.Share[o]
		}
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("shares of op %d sum to %v", o, s)
		}
	}
	for _, w := range p.Workers {
		var inst float64
		for o, s := range w.Share {
			inst += s * float64(p.Parallelism[o])
		}
		if inst > float64(slots)+1e-9 {
			t.Errorf("worker %d holds %.1f instances > %d slots", w.ID, inst, slots)
		}
	}
}

func TestZhang24Parallelism(t *testing.T) {
	z, _ := NewZhang24(DefaultZhang24Config())
	// No samples, no prior: r ≡ 0. An instance is one slot, S = 85,000
	// µs/s, so 212.5/s at 400 µs; at Util 0.9, 191.25/s. 5,000/s needs
	// ⌈26.1⌉ = 27 instances, over-provisioned on ⌈27/(0.5·10)⌉ = 6 workers.
	p, err := z.Plan(0, Observation{App: oneOp(), InputRate: 5000, Bandwidth: 1e8})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Parallelism, []int{27}) || p.NumWorkers() != 6 {
		t.Errorf("P = %v on %d workers, want [27] on 6", p.Parallelism, p.NumWorkers())
	}
	// Every worker holds about half its slots (the balance score spreads).
	for _, w := range p.Workers {
		if inst := w.Share[0] * 27; inst < 4 || inst > 5 {
			t.Errorf("worker %d holds %.0f instances, want 4–5 of 10 slots", w.ID, inst)
		}
	}
	// The count stops at MaxWorkers: with 10, SYN at 60% of its 10-worker
	// rate (775/s) already needs all 10.
	cfg := DefaultZhang24Config()
	cfg.MaxWorkers = 10
	z, _ = NewZhang24(cfg)
	for _, rate := range []float64{775, 1300} {
		if p, _ := z.Plan(0, Observation{App: SYN(), InputRate: rate, Bandwidth: 1e8}); p.NumWorkers() != 10 {
			t.Errorf("SYN at %v/s: %d workers, want 10", rate, p.NumWorkers())
		}
	}
}

func TestZhang24Fit(t *testing.T) {
	z, _ := NewZhang24(DefaultZhang24Config())
	h := Overhead{K: 0.3, B: 0.5, RMax: 0.95}
	for rep := range 3 {
		for p := 1; p <= 20; p++ {
			z.AddSample("o", p, h.R(p)+0.005*float64(rep-1))
		}
	}
	got := z.Fit("o")
	if math.Abs(got.B-0.5) > 0.03 || math.Abs(got.K-0.3)/0.3 > 0.15 {
		t.Errorf("fit %+v, want k ≈ 0.3, b ≈ 0.5", got)
	}
	if none := z.Fit("other"); none.R(10) != 0 {
		t.Errorf("no samples: %+v, want r ≡ 0 (no prior)", none)
	}
	if h.R(1000) > 0.95 || (Overhead{K: 1, B: 0.95, RMax: 0.95}).R(1000) > 0.95 {
		t.Error("r(p) exceeds RMax")
	}
}

func TestZhang24Placement(t *testing.T) {
	// a (5 instances) → b (5), c (10) isolated: 20 instances, 2 workers.
	// a alternates (balance): 3 on worker 0, 2 on worker 1. b's first
	// instance: affinity 0.6 vs 0.4, balance 0.7 vs 0.8 → worker 0 at
	// weight 0.5; worker 1 with pure balance.
	app := App{Name: "abc", Operators: []Operator{{Name: "a", ExecUS: 400}, {Name: "b", ExecUS: 400}, {Name: "c", ExecUS: 400}}, Edges: []Edge{{0, 1, 1}}}
	d := Demand{Exec: []float64{1, 1, 1}, ExecUS: []float64{1, 1, 1}, Edge: []float64{1000}}
	for _, tt := range []struct {
		weight float64
		worker int
	}{{0.5, 0}, {0, 1}} {
		cfg := DefaultZhang24Config()
		cfg.AffinityWeight = tt.weight
		z, _ := NewZhang24(cfg)
		counts, scores := z.place(&app, d, []int{5, 5, 10}, 2)
		if counts[0][0] != 3 || counts[1][0] != 2 {
			t.Errorf("weight %v: a placed %d/%d, want 3/2", tt.weight, counts[0][0], counts[1][0])
		}
		var got Score
		for _, s := range scores {
			if s.Name == "affinity" && s.Op == 1 {
				got = s
			}
		}
		if got.Worker != tt.worker {
			t.Errorf("weight %v: b's first instance on worker %d (%+v), want %d", tt.weight, got.Worker, got, tt.worker)
		}
		if tt.weight == 0.5 && math.Abs(got.Value-0.6) > 1e-12 {
			t.Errorf("affinity %v, want 0.6", got.Value)
		}
		for w := range counts {
			var n int
			for _, c := range counts[w] {
				n += c
			}
			if n > 10 {
				t.Errorf("worker %d holds %d instances", w, n)
			}
		}
	}
}

func TestDS2(t *testing.T) {
	// a (400 µs) → b (500 µs), measured selectivity 2 (nominal ratio 1).
	app := App{Name: "ab", Operators: []Operator{{Name: "a", ExecUS: 400}, {Name: "b", ExecUS: 500}}, Edges: []Edge{{0, 1, 1}}}
	ob := measuredObs(app, 3000, 1000, []float64{1000, 2000}, []float64{2000}, []int{1, 1})
	s, _ := NewDS2(DefaultDS2Config())
	p, err := s.Plan(0, ob)
	if err != nil {
		t.Fatal(err)
	}
	// One slot's CPU is S = 850,000/10 = 85,000 µs/s.
	// P_a = ⌈3000·400/S⌉ = ⌈14.1⌉ = 15; target_b = 3000·2 = 6000 →
	// ⌈6000·500/S⌉ = ⌈35.3⌉ = 36; 51 instances fill ⌈51/10⌉ = 6 workers.
	if !slices.Equal(p.Parallelism, []int{15, 36}) || p.NumWorkers() != 6 {
		t.Errorf("P = %v on %d workers, want [15 36] on 6", p.Parallelism, p.NumWorkers())
	}
	checkSlots(t, p, DefaultSlots)
}

func TestHPA(t *testing.T) {
	h, _ := NewHPA(DefaultHPAConfig())
	app := oneOp()
	step := func(now, exec float64, cur int) int {
		t.Helper()
		p, err := h.Plan(now, measuredObs(app, exec, exec, []float64{exec}, nil, []int{cur}))
		if err != nil {
			t.Fatal(err)
		}
		return p.Parallelism[0]
	}
	// 2 replicas at 400 µs, each requesting one slot's S = 85,000 µs/s:
	// utilization = exec·400/(2·S).
	if got := step(0, 297.5, 2); got != 2 { // u = 0.70: on target
		t.Errorf("on target: %d, want 2", got)
	}
	if got := step(1, 318.75, 2); got != 2 { // u = 0.75: ratio 1.07 within 10%
		t.Errorf("within tolerance: %d, want 2", got)
	}
	if got := step(2, 425, 2); got != 3 { // u = 1.0: ⌈2·1.43⌉ = 3 at once
		t.Errorf("scale up: %d, want 3", got)
	}
	if got := step(10, 85, 3); got != 3 { // wants 1, but 3 was recommended 8 s ago
		t.Errorf("stabilized scale-down: %d, want 3", got)
	}
	if got := step(400, 85, 3); got != 1 { // window passed
		t.Errorf("scale down after the window: %d, want 1", got)
	}
}

// TestHPACountsRequestCPU: with the workers' CPU counters reported, the
// request CPU of an operator's sends counts toward its utilization.
func TestHPACountsRequestCPU(t *testing.T) {
	app := wc9()
	// split: 100/s × 450 µs = 45,000; count: 900/s × 350 µs = 315,000;
	// the worker's counter reads 405,000, so 45,000 µs/s went to split's
	// 900 requests/s.
	ob := measuredObs(app, 100, 100, []float64{100, 900}, []float64{900}, []int{1, 5})
	if got := requestCPU(&ob.App, &ob.Workers[0])[0]; got != 0 {
		t.Fatalf("no load reported: request CPU %v", got)
	}
	ob.Workers[0].LoadUS = 405000
	if got := requestCPU(&ob.App, &ob.Workers[0])[0]; math.Abs(got-45000) > 1e-9 {
		t.Fatalf("split's request CPU %v, want 45,000", got)
	}
	if got := requestCPU(&ob.App, &ob.Workers[0])[1]; got != 0 {
		t.Fatalf("count sends nothing, request CPU %v", got)
	}
	// split's utilization: (45,000 + 45,000)/85,000 = 1.06 with the
	// counter, 0.53 without: it scales up only when the sends count.
	plan := func(load float64) int {
		h, _ := NewHPA(DefaultHPAConfig())
		o := ob
		o.Workers = []WorkerObs{ob.Workers[0]}
		o.Workers[0].LoadUS = load
		p, err := h.Plan(0, o)
		if err != nil {
			t.Fatal(err)
		}
		return p.Parallelism[0]
	}
	if without, with := plan(0), plan(405000); without != 1 || with != 2 {
		t.Errorf("split replicas: %d without the CPU counter, %d with (want 1 and 2)", without, with)
	}
}

func TestSPWorkerCounts(t *testing.T) {
	app := AA()
	ob := Observation{App: app, InputRate: 8000, Bandwidth: 1e8}
	ff, _ := NewFaaSFlow(DefaultFaaSFlowConfig())
	want, _ := ff.Plan(0, ob)
	fsp, err := NewFaaSFlowSP(DefaultConfig(), DefaultFaaSFlowConfig())
	if err != nil {
		t.Fatal(err)
	}
	got, err := fsp.Plan(0, ob)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumWorkers() != want.NumWorkers() || got.Planner != "faasflow-sp" {
		t.Errorf("FaaSFlow-SP: %d workers, FaaSFlow %d", got.NumWorkers(), want.NumWorkers())
	}
	if len(got.Explain.Order) != len(app.Operators) {
		t.Errorf("FaaSFlow-SP does not use CLASP's placement: order %v", got.Explain.Order)
	}
	z, _ := NewZhang24(DefaultZhang24Config())
	wantZ, _ := z.Plan(0, ob)
	zsp, _ := NewZhang24SP(DefaultConfig(), DefaultZhang24Config())
	gotZ, err := zsp.Plan(0, ob)
	if err != nil {
		t.Fatal(err)
	}
	if gotZ.NumWorkers() != wantZ.NumWorkers() {
		t.Errorf("Zhang24-SP: %d workers, Zhang24 %d", gotZ.NumWorkers(), wantZ.NumWorkers())
	}
	c, _ := New(DefaultConfig())
	own, _ := c.Plan(0, ob)
	if own.NumWorkers() == gotZ.NumWorkers() && own.NumWorkers() == got.NumWorkers() {
		t.Errorf("CLASP and both -SP variants all use %d workers: the example does not discriminate", own.NumWorkers())
	}
}

// TestGatedNamed: every baseline runs behind the triggers under its own
// name.
func TestGatedNamed(t *testing.T) {
	ff, _ := NewFaaSFlow(DefaultFaaSFlowConfig())
	g, err := NewGatedNamed(ff, "faasflow", DefaultTriggerConfig(), DefaultCostModel())
	if err != nil || g.Name() != "faasflow" {
		t.Fatalf("name %q, err %v", g.Name(), err)
	}
	if _, err := NewGatedNamed(ff, "", DefaultTriggerConfig(), DefaultCostModel()); err == nil {
		t.Error("empty name accepted")
	}
	// The paper's example behind the trigger: the lag must hold 3 s before
	// FaaSFlow's extrapolation (5 workers) is applied.
	app := oneOp()
	if _, err := g.Plan(0, Observation{App: app, InputRate: 500, Bandwidth: 1e8}); err != nil {
		t.Fatal(err)
	}
	ob := onWorkers(Observation{App: app, InputRate: 500, Throughput: 100, Bandwidth: 1e8, Parallelism: []int{10}}, 1)
	var changedAt []float64
	for now := 1.0; now <= 4; now++ {
		p, err := g.Plan(now, ob)
		if err != nil {
			t.Fatal(err)
		}
		if p.Changed {
			changedAt = append(changedAt, now)
			if p.NumWorkers() != 5 {
				t.Errorf("applied %d workers, want 5", p.NumWorkers())
			}
		}
	}
	if !slices.Equal(changedAt, []float64{3}) {
		t.Errorf("plans applied at %v, want [3] (lag held for 3 s since t = 0)", changedAt)
	}
}

func TestGatedHolds(t *testing.T) {
	ds2, _ := NewDS2(DefaultDS2Config())
	g, err := NewGated(ds2, DefaultTriggerConfig(), DefaultCostModel())
	if err != nil {
		t.Fatal(err)
	}
	app := oneOp()
	p0, err := g.Plan(0, Observation{App: app, InputRate: 3000, Bandwidth: 1e8})
	if err != nil || !p0.Changed || p0.Reason != "initial placement" {
		t.Fatalf("initial: %v %+v", err, p0)
	}
	ob := measuredObs(app, 6000, 6000, []float64{6000}, nil, p0.Parallelism)
	p1, _ := g.Plan(1, ob)
	if p1.Changed || !slices.Equal(p1.Parallelism, p0.Parallelism) {
		t.Errorf("held plan changed: %+v", p1)
	}
	p2, _ := g.Plan(2, ob)
	// ⌈6000·400/85,000⌉ = ⌈28.2⌉ = 29
	if !p2.Changed || p2.Parallelism[0] != 29 {
		t.Errorf("after 2 s at double rate: changed %v P %v, want true [29]", p2.Changed, p2.Parallelism)
	}
}

// wc9 is word count with the 9-word sentences of the hand-worked examples
// (WC itself splits into 12, the paper's "more than 10").
func wc9() App {
	a := WC()
	a.Edges[0].Ratio = 9
	return a
}
