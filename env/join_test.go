package env

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// joinApp is a three-task fork-join on one server: Split sends n siblings
// per message to Work, Join (JoinOf Split unless plain) gathers them.
func joinApp(n float64, plain bool) App {
	j := Task{Name: "Join", MIPSPerEvent: 0.001, Selectivity: 1 / n, OutBytes: 100, MemoryMB: 64, JoinOf: "Split"}
	if plain {
		j.JoinOf = ""
	}
	return App{
		Name: "fj",
		Tasks: []Task{
			{Name: "Split", MIPSPerEvent: 0.001, Selectivity: n, OutBytes: 100, MemoryMB: 64},
			{Name: "Work", MIPSPerEvent: 5, Selectivity: 1, OutBytes: 100, MemoryMB: 64},
			j,
		},
		Edges:   []Edge{{0, 1}, {1, 2}},
		Sources: []int{0}, Sinks: []int{2},
		SLOMS: 1000,
	}
}

// TestJoinOfValidate: a malformed fork-join is refused with an error
// naming what is wrong; ETL's Join is a join of SenMLParse, PRED has none.
func TestJoinOfValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*App)
		want string
	}{
		{"unknown fork", func(a *App) { a.Tasks[2].JoinOf = "Nope" }, "names no other task"},
		{"self", func(a *App) { a.Tasks[2].JoinOf = "Join" }, "names no other task"},
		{"fractional fork", func(a *App) { a.Tasks[0].Selectivity = 2.5; a.Tasks[2].Selectivity = 0.4 }, "whole number"},
		{"selectivity", func(a *App) { a.Tasks[2].Selectivity = 0.5 }, "want 1/10"},
		{"between not 1:1", func(a *App) { a.Tasks[1].Selectivity = 2 }, "between fork"},
		{"not downstream", func(a *App) {
			a.Tasks = []Task{{Name: "A", MIPSPerEvent: 1, Selectivity: 2}, {Name: "B", MIPSPerEvent: 1, Selectivity: 0.5, JoinOf: "A"}}
			a.Edges, a.Sources, a.Sinks = nil, []int{0, 1}, []int{0, 1}
		}, "not downstream"},
		{"input from outside", func(a *App) {
			a.Tasks = append(a.Tasks, Task{Name: "Side", MIPSPerEvent: 1, Selectivity: 1})
			a.Sources = append(a.Sources, 3)
			a.Edges = append(a.Edges, Edge{3, 2})
		}, "from outside"},
		{"leaks out", func(a *App) { a.Sinks = append(a.Sinks, 1) }, "source or sink"},
	} {
		a := joinApp(10, false)
		c.edit(&a)
		err := a.validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
	if err := joinApp(10, false).validate(); err != nil {
		t.Fatal(err)
	}
	etl := ETL()
	if f, err := etl.joinFork(4); f != 0 || err != nil {
		t.Errorf("ETL Join gathers task %d (%v), want SenMLParse", f, err)
	}
	pred := PRED()
	for k := range pred.Tasks {
		if f, _ := pred.joinFork(k); f >= 0 {
			t.Errorf("PRED task %s is a join", pred.Tasks[k].Name)
		}
	}
}

// joinRun runs app at rate msg/s for 40 steps with every task at 10,000
// millicores on server 0 (edited by edit if not nil) under physics ph, and
// returns the steps' mean latencies (ms) after the first 5, the reference
// core's individual latencies (ms; none for the fast core) and the
// service time of stage 1 (Work's first replica), ms.
func joinRun(t *testing.T, app App, edit func(*Config), mode Mode, ph Physics, rate float64) (means, lats []float64, svc float64) {
	t.Helper()
	net, servers := DefaultRegion()
	cfg := Config{App: app, Network: net, Servers: servers, Placement: []int{0, 0, 0}, Workload: constantRates(rate, 40), Mode: mode, Physics: ph}
	if edit != nil {
		edit(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(3)
	tg := []float64{10000, 10000, 10000}
	for s := 0; s < 40; s++ {
		sr, err := e.Step(Action{Targets: tg})
		if err != nil {
			t.Fatal(err)
		}
		if s < 5 {
			continue
		}
		means = append(means, sr.Info.MeanMS)
		if p, ok := e.core.(*perEvent); ok {
			for _, l := range p.lat {
				lats = append(lats, l*1000)
			}
		}
	}
	switch c := e.core.(type) {
	case *fluid:
		svc = c.stages[1].service
	case *perEvent:
		svc = c.stages[1].service
	}
	return means, lats, svc * 1000
}

func joinLatency(t *testing.T, app App, mode Mode, ph Physics, rate float64) (float64, float64) {
	t.Helper()
	means, _, svc := joinRun(t, app, nil, mode, ph, rate)
	m := 0.0
	for _, x := range means {
		m += x
	}
	return m / float64(len(means)), svc
}

// TestForkJoinGathersSiblings: a message's latency is that of the last of
// its siblings to leave the join. Split sends 10 siblings at once to one
// Work replica, so at low load (20 msg/s, Work ≈ 1% busy) the last
// leaves Work after all ten siblings' work: the mean latency is 10 × Work's
// mean service time (plus the tiny Split and Join), not 1× as on a single
// path. Both cores must show it (within 10% of 10× and of each other);
// the fast core without Task.JoinOf follows one sibling and shows about 1×,
// so the test fails if the tracer's gather is removed.
func TestForkJoinGathersSiblings(t *testing.T) {
	ph := Physics{ServiceCV: 1} // stochastic service: the fast core's tracer is on
	fast, svc := joinLatency(t, joinApp(10, false), Fluid, ph, 20)
	ref, _ := joinLatency(t, joinApp(10, false), PerEvent, ph, 20)
	plain, _ := joinLatency(t, joinApp(10, true), Fluid, ph, 20)
	t.Logf("Work service %.3f ms; mean latency: fast %.3f ms, reference %.3f ms, fast without the join %.3f ms", svc, fast, ref, plain)
	want := 10 * svc
	for _, c := range []struct {
		what string
		got  float64
	}{{"fast", fast}, {"reference", ref}} {
		if math.Abs(c.got-want) > 0.1*want {
			t.Errorf("%s core: mean latency %.3f ms, want 10 × %.3f ms ± 10%%", c.what, c.got, svc)
		}
	}
	if math.Abs(fast-ref) > 0.1*ref {
		t.Errorf("fast %.3f ms vs reference %.3f ms", fast, ref)
	}
	if plain > 2*svc {
		t.Errorf("without the join the fast core follows one sibling: %.3f ms, want about %.3f", plain, svc)
	}
}

// TestForkJoinMaxOfSiblings: with Work split into ten replicas on ten
// identical servers on one switch (no network delay), each replica
// receiving one of a message's ten siblings (the reference core routes by
// credit, so equal shares take turns), the siblings' delays at Work are
// i.i.d. log-normal (mean s, CV 1; 4% busy at 20 msg/s) and a message leaves the join when the
// slowest one arrives: at low load the reference core's latencies follow
// the maximum of ten, P(L ≤ x) = F(x)¹⁰. Checked at the quartiles and the
// 90th percentile (within 5% of s·Q_max) and against the single-path
// quantile, which is far below.
func TestForkJoinMaxOfSiblings(t *testing.T) {
	// The log-normal factor of mean 1 and CV 1: σ² = ln 2, μ = −σ²/2.
	sigma := math.Sqrt(math.Ln2)
	q := func(p float64) float64 { return math.Exp(-sigma*sigma/2 + sigma*math.Sqrt2*math.Erfinv(2*p-1)) }
	edit := func(c *Config) {
		c.Servers = nil
		plan := [][]Replica{{{Server: 0, Share: 1}}, nil, {{Server: 0, Share: 1}}}
		for i := range 11 {
			c.Servers = append(c.Servers, ServerFromModel(fmt.Sprintf("s%d", i), Catalogue[0], 0))
			if i > 0 {
				plan[1] = append(plan[1], Replica{Server: i, Share: 0.1})
			}
		}
		c.Replicas = plan
	}
	ph := Physics{ServiceCV: 1}
	refMeans, lats, svc := joinRun(t, joinApp(10, false), edit, PerEvent, ph, 20)
	fastMeans, _, _ := joinRun(t, joinApp(10, false), edit, Fluid, ph, 20)
	// The fast core (its tracer's general gather, the siblings stratified
	// over the replicas) agrees on the mean within 5%.
	rm, fm := 0.0, 0.0
	for i := range refMeans {
		rm += refMeans[i] / float64(len(refMeans))
		fm += fastMeans[i] / float64(len(fastMeans))
	}
	t.Logf("mean latency: reference %.3f ms, fast %.3f ms; max of ten %.3f ms", rm, fm, svc*meanMax(q, 10))
	if math.Abs(fm-rm) > 0.05*rm {
		t.Errorf("fast core mean %.3f ms, reference %.3f ms", fm, rm)
	}
	if len(lats) < 100 {
		t.Fatalf("%d latencies", len(lats))
	}
	slices.Sort(lats)
	for _, p := range []float64{0.25, 0.5, 0.75, 0.9} {
		got := lats[int(p*float64(len(lats)))]
		want := svc * q(math.Pow(p, 0.1)) // F_max(x) = F(x)^10
		single := svc * q(p)
		t.Logf("p%.0f: %.3f ms; max of ten %.3f ms; one sibling %.3f ms", 100*p, got, want, single)
		if math.Abs(got-want) > 0.05*want+0.02 {
			t.Errorf("p%.0f latency %.3f ms, want the max of ten siblings' %.3f ms", 100*p, got, want)
		}
	}
}

// meanMax is E[max of n draws] of quantile function q: ∫ q(u)·n·u^{n−1} du
// by the midpoint rule.
func meanMax(q func(float64) float64, n int) float64 {
	const m = 20000
	s := 0.0
	for i := range m {
		u := (float64(i) + 0.5) / m
		s += q(u) * float64(n) * math.Pow(u, float64(n-1))
	}
	return s / m
}

// TestGatherChainMatchesWalk holds the tracer's chain shortcut
// (gatherChain: the first and last sibling, the middle ones' work as one
// draw) against its per-sibling walk (gather with the shortcut off) under
// the realistic physics (CFS on): on the fork-join toy with Work at 800
// millicores and offered load 0.75, where the ten siblings are most of
// the latency, and on ETL at offered load 0.8 and 0.95. Over 4 seeds × 40
// steps the medians of the steps' p95 and mean latencies agree within 5%
// (measured: 0.1–4%). (Medians: a few backlogged steps dominate the mean
// of 160 steps' means.)
func TestGatherChainMatchesWalk(t *testing.T) {
	etl, err := EdgeConfig("etl", 7, constantRates(2500, 45))
	if err != nil {
		t.Fatal(err)
	}
	net, servers := DefaultRegion()
	toy := Config{App: joinApp(10, false), Network: net, Servers: servers, Placement: []int{0, 0, 0}, Workload: constantRates(12, 45)}
	for _, c := range []struct {
		name string
		cfg  Config
		tg   []float64
	}{
		{"toy", toy, []float64{10000, 800, 10000}},
		{"etl ρ 0.80", etl, loadTargets(t, etl, 0.8)},
		{"etl ρ 0.95", etl, loadTargets(t, etl, 0.95)},
	} {
		cfg := c.cfg
		cfg.Physics = realisticNoObs()
		var p95, mean [2][]float64
		for walk := range 2 {
			for seed := uint64(1); seed <= 4; seed++ {
				e, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				e.Reset(seed)
				tr := e.core.(*fluid).tr
				chains := 0
				for i := range tr.fanChain {
					if tr.fanChain[i] {
						chains++
					}
					if walk == 1 {
						tr.fanChain[i] = false
					}
				}
				if chains == 0 {
					t.Fatalf("%s: the fork is not a chain of one replica per task", c.name)
				}
				for s := 0; s < 45; s++ {
					sr, err := e.Step(Action{Targets: c.tg})
					if err != nil {
						t.Fatal(err)
					}
					if s >= 5 {
						p95[walk] = append(p95[walk], sr.Info.P95MS)
						mean[walk] = append(mean[walk], sr.Info.MeanMS)
					}
				}
			}
			slices.Sort(p95[walk])
			slices.Sort(mean[walk])
		}
		mc, mw := p95[0][len(p95[0])/2], p95[1][len(p95[1])/2]
		ac, aw := mean[0][len(mean[0])/2], mean[1][len(mean[1])/2]
		t.Logf("%s: median p95 chain %.2f ms, walk %.2f ms; median mean %.2f, %.2f ms", c.name, mc, mw, ac, aw)
		if math.Abs(mc-mw) > 0.05*mw || math.Abs(ac-aw) > 0.05*aw {
			t.Errorf("%s: chain shortcut median p95 %.2f ms, mean %.2f; walk %.2f, %.2f", c.name, mc, ac, mw, aw)
		}
	}
}
