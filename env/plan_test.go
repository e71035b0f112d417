package env

import (
	"math"
	"slices"
	"testing"
)

// cluster is a serverless-style scenario: three 1-core workers sharing
// their CPU among the replicas they run, a two-operator chain a → b with
// 0.4 ms of work per event, chained-request costs, and a stateful a.
func cluster(rate float64, steps int) Config {
	cfg := chain(0.4, []Replica{{Server: 0, Share: 1}}, RequestCosts{AlphaUS: 38.5, BetaUS: 275, GammaUS: 51500}, rate)
	for i := range cfg.Servers {
		cfg.Servers[i].CPU, cfg.Servers[i].MIPS = 1000, 1000
	}
	cfg.Replicas[1] = []Replica{{Server: 1, Share: 1}}
	cfg.App.Tasks[0].StateMB = 64
	cfg.SharedCPU = true
	cfg.Workload = constRate(rate, steps)
	return cfg
}

// total counts every event in the system: waiting, in service or in flight.
func total(e *Env) float64 {
	f := e.core.(*fluid)
	x := 0.0
	for i := range f.stages {
		x += f.stages[i].queue.total
	}
	return x
}

func TestScaleOutPlan(t *testing.T) {
	e, err := New(cluster(3000, 60))
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(0)
	var info Info
	for s := 0; s < 10; s++ {
		var sr StepResult
		if sr, err = e.Step(Action{Hold: true}); err != nil {
			t.Fatal(err)
		}
		info = sr.Info
	}
	// One worker serves a at 1e6 µs / (400 + 275 µs + 51,500/N) per second.
	one := info.Workers[0].Executions[0]
	if want := (1e6 - 51500) / 675; math.Abs(one-want) > 0.01*want {
		t.Fatalf("one worker: %v executions/s, want %v", one, want)
	}
	if !info.Violated {
		t.Fatal("an overloaded worker should violate the SLO")
	}
	before := total(e)
	plan := [][]Replica{{{Server: 0, Share: 0.5}, {Server: 2, Share: 0.5}}, {{Server: 1, Share: 1}}}
	var sr StepResult
	sr, err = e.Step(Action{Replicas: plan})
	info = sr.Info
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, e)
	// Conservation across the re-plan: what was in the system, plus what
	// arrived, minus what was delivered, is in the system now.
	after := total(e)
	if diff := before + info.OfferedRate - info.SinkEvents - after; math.Abs(diff) > 1e-6*before {
		t.Fatalf("re-plan lost %v events", diff)
	}
	// Half of a's 64 MB state and of its queue moved to server 2, which
	// waited for it: 1 link of 1 ms, 1 Gbps.
	m := info.Migration
	if m.Replicas != 1 || m.MovedMB < 32 || m.MaxPauseS < 0.001+32*8*(1<<20)/1e9 {
		t.Fatalf("migration %+v", m)
	}
	for s := 0; s < 5; s++ {
		var sr StepResult
		sr, _ = e.Step(Action{Hold: true})
		info = sr.Info
		checkInvariants(t, e)
	}
	two := info.Workers[0].Executions[0] + info.Workers[2].Executions[0]
	if two < 1.7*one {
		t.Fatalf("two workers serve %v events/s, one served %v", two, one)
	}
	// Reset restores the configured plan.
	fresh, _ := New(cluster(3000, 60))
	a := trajectoryHold(t, e)
	b := trajectoryHold(t, fresh)
	if !slices.Equal(a, b) {
		t.Fatal("Reset after a re-plan does not restore the initial plan")
	}
}

func trajectoryHold(t *testing.T, e *Env) []float64 {
	e.Reset(0)
	var out []float64
	for s := 0; s < 10; s++ {
		sr, err := e.Step(Action{Hold: true})
		r := sr.Reward
		info := sr.Info
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r, info.P95MS, info.Throughput)
	}
	return out
}

func TestSharedCPUFollowsDemand(t *testing.T) {
	cfg := cluster(1500, 30)
	// a and b on the same worker.
	cfg.Replicas = [][]Replica{{{Server: 0, Share: 1}}, {{Server: 0, Share: 1}}}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(0)
	var info Info
	for s := 0; s < 20; s++ {
		var sr StepResult
		sr, _ = e.Step(Action{Hold: true})
		info = sr.Info
	}
	// The worker is overloaded and a, upstream, holds the backlog: it gets
	// the larger part of the core, and the two parts add up to the core.
	if info.Queue[0] <= info.Queue[1] || info.Applied[0] <= info.Applied[1] || math.Abs(info.Applied[0]+info.Applied[1]-1000) > 1e-6 {
		t.Fatalf("shared allocations %v with queues %v", info.Applied, info.Queue)
	}
	// The worker is saturated: its load equals its budget.
	if w := info.Workers[0]; math.Abs(w.LoadUS-1e6) > 0.01e6 || w.LocalRequests == 0 || w.RemoteRequests != 0 {
		t.Fatalf("worker %+v", w)
	}
	if _, err := e.Step(Action{Targets: []float64{500, 500}}); err == nil {
		t.Fatal("allocations accepted in a shared-CPU scenario")
	}
}

func TestInvalidPlansChangeNothing(t *testing.T) {
	e, _ := New(cluster(100, 30))
	e.Reset(0)
	e.Step(Action{Hold: true})
	snapBefore := total(e)
	for _, plan := range [][][]Replica{
		{{{Server: 0, Share: 1}}},
		{{{Server: 0, Share: 0.5}}, {{Server: 1, Share: 1}}},
		{{{Server: 0, Share: 0.5}, {Server: 0, Share: 0.5}}, {{Server: 1, Share: 1}}},
		{{{Server: 7, Share: 1}}, {{Server: 1, Share: 1}}},
		{{}, {{Server: 1, Share: 1}}},
	} {
		if _, err := e.Step(Action{Replicas: plan}); err == nil {
			t.Fatalf("plan %v accepted", plan)
		}
	}
	if e.replanned || total(e) != snapBefore || e.StepIndex() != 1 {
		t.Fatal("a refused plan changed the environment")
	}
	if _, err := e.Step(Action{Hold: true, Replicas: [][]Replica{{}}}); err == nil {
		t.Fatal("two kinds of action accepted at once")
	}
	// Reserved CPU: a plan that does not fit the current allocations.
	rc := chain(0.4, []Replica{{Server: 0, Share: 1}}, RequestCosts{}, 100)
	rc.MaxCPU = 2000
	r, _ := New(rc)
	r.Reset(0)
	r.Step(Action{Targets: []float64{1500, 1500}})
	if _, err := r.Step(Action{Replicas: [][]Replica{{{Server: 2, Share: 1}}, {{Server: 2, Share: 1}}}}); err == nil {
		t.Fatal("plan over capacity accepted")
	}
}
