package env

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkStep measures one environment step (simulation, reward and
// observation) with a fixed mid-size allocation on the taxi trace; etl-x100
// runs ETL at 100× the trace rate with demands divided by 100, so the same
// utilizations at a hundred times the events: its cost must not grow.
//
// The -realistic variants run the realistic physics (ScenarioPhysics):
// random arrivals, rate modulation, service variability, CFS, jitter,
// delay and measured metrics, with the tracer giving the latencies; the
// -hops variants add spread hops end to end (Physics.HopSpread,
// HopsEndToEnd).
//
// Each reports steps/s of wall time and, where the OS tells the process's
// CPU time, steps/cpu-s: the rate per busy core, which a shared host's
// load changes far less (the loop runs on one goroutine). The goals
// (docs/simulator.md, Speed): etl-realistic at 50,000 steps/s or more
// per core, etl-x100 within 1.5× the time of etl, no allocation per step.
// An episode runs into truncation and Reset (3,600 taxi steps), after
// which the allocation is InitialCPU's.
func BenchmarkStep(b *testing.B) {
	w := sharedTrace(b, "taxi_nab_5min_2015-01-01_3600pts.csv", 1)
	realistic, _ := ScenarioPhysics(ScenarioRealistic)
	// hops: the realistic physics with spread hops end to end, as the
	// calibrated scenario files have them.
	hops := realistic
	hops.HopMS, hops.HopSpread, hops.HopsEndToEnd = 10, 1, true
	for _, bc := range []struct {
		name    string
		profile string
		mult    float64
		physics Physics
	}{{"pred", "pred", 1, Physics{}}, {"etl", "etl", 1, Physics{}}, {"etl-x100", "etl", 100, Physics{}},
		{"pred-realistic", "pred", 1, realistic}, {"etl-realistic", "etl", 1, realistic}, {"etl-x100-realistic", "etl", 100, realistic},
		{"pred-hops", "pred", 1, hops}, {"etl-hops", "etl", 1, hops}} {
		b.Run(bc.name, func(b *testing.B) {
			e := scaledPhysics(b, bc.profile, w, 1/bc.mult, Fluid, bc.physics)
			e.Reset(1)
			act := make([]int, e.NumTasks())
			for k := range act {
				act[k] = NoChange
			}
			// Warm up to a realistic allocation.
			for k := range act {
				act[k] = 4
			}
			e.Step(Action{Choices: act})
			for k := range act {
				act[k] = NoChange
			}
			b.ReportAllocs()
			cpu0, cpuOK := processCPU()
			for b.Loop() {
				if sr, err := e.Step(Action{Choices: act}); err != nil {
					b.Fatal(err)
				} else if sr.Truncated {
					e.Reset(1)
				}
			}
			if s := b.Elapsed().Seconds(); s > 0 {
				b.ReportMetric(float64(b.N)/s, "steps/s")
			}
			if cpu1, ok := processCPU(); ok && cpuOK && cpu1 > cpu0 {
				b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "steps/cpu-s")
			}
		})
	}
}

// vecBenchEnvs is the size of BenchmarkVecStep's vector: the 16 envs
// `serve env` steps for Python.
const vecBenchEnvs = 16

// BenchmarkVecStep measures a VecEnv step of 16 ETL envs with the
// realistic physics on the taxi trace (placements 42 and 37 alternating,
// NextStep autoreset, as serve/cli's BenchmarkEnvServeCPU builds them),
// beside the same envs stepped alone, so that the cost of stepping an env
// inside a vector is measured against stepping it alone in one run.
//
// single steps one env at a time for 256 steps in a row, the two
// placements in turn (an env alone, its working set hot); workers=1 and
// workers=2 step the 16-env vector. hold keeps the warm-up allocation
// (BenchmarkStep's NoChange); moving changes every allocation every step
// (choice (t·3 + k + i) mod 5, the serve benchmark's actions; Python's
// random actions move it as often).
//
// Each reports ns/env-step of wall time and, where the OS tells the
// process's CPU time, cpu-ns/env-step (all workers' CPU); allocs/op is
// per vector step (per env step for single). The goal: cpu-ns/env-step of
// workers=1 and workers=2 within 1.15× that of single.
func BenchmarkVecStep(b *testing.B) {
	w := sharedTrace(b, "taxi_nab_5min_2015-01-01_3600pts.csv", 1)
	realistic, _ := ScenarioPhysics(ScenarioRealistic)
	cfgs := make([]Config, vecBenchEnvs)
	for i := range cfgs {
		c, err := EdgeConfig("etl", []uint64{42, 37}[i%2], w)
		if err != nil {
			b.Fatal(err)
		}
		c.Physics = realistic
		cfgs[i] = c
	}
	tasks := len(cfgs[0].App.Tasks)
	// acts[t][i]: the action of env i at step t mod len(acts).
	actions := func(moving bool) [][]Action {
		acts := make([][]Action, 64)
		for t := range acts {
			acts[t] = make([]Action, vecBenchEnvs)
			for i := range acts[t] {
				ch := make([]int, tasks)
				for k := range ch {
					ch[k] = NoChange
					if moving || t == 0 {
						ch[k] = (t*3 + k + i) % 5
					}
				}
				acts[t][i] = Action{Choices: ch}
			}
		}
		return acts
	}
	report := func(b *testing.B, envSteps int, cpu0 time.Duration, cpuOK bool) {
		if s := b.Elapsed().Seconds(); s > 0 {
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(envSteps), "ns/env-step")
		}
		if cpu1, ok := processCPU(); ok && cpuOK && cpu1 > cpu0 {
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(envSteps), "cpu-ns/env-step")
		}
	}
	for _, mv := range []struct {
		name   string
		moving bool
	}{{"hold", false}, {"moving", true}} {
		acts := actions(mv.moving)
		b.Run(mv.name+"/single", func(b *testing.B) {
			var es [2]*Env
			for j := range es {
				e, err := New(cfgs[j])
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := e.Reset(1); err != nil {
					b.Fatal(err)
				}
				es[j] = e
			}
			b.ReportAllocs()
			cpu0, cpuOK := processCPU()
			k := 0
			for b.Loop() {
				j := k / 256 % 2
				// Env j plays vector env j's actions.
				if sr, err := es[j].Step(acts[k%len(acts)][j]); err != nil {
					b.Fatal(err)
				} else if sr.Terminated || sr.Truncated {
					es[j].Reset(1)
				}
				k++
			}
			report(b, k, cpu0, cpuOK)
		})
		for _, workers := range []int{1, 2} {
			b.Run(mv.name+"/workers="+strconv.Itoa(workers), func(b *testing.B) {
				v, err := NewVec(cfgs, NextStep, workers)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := v.Reset(1); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu0, cpuOK := processCPU()
				k := 0
				for b.Loop() {
					if _, err := v.Step(acts[k%len(acts)]); err != nil {
						b.Fatal(err)
					}
					k++
				}
				report(b, k*vecBenchEnvs, cpu0, cpuOK)
			})
		}
	}
}
