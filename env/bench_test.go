package env

import "testing"

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
