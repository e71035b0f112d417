package agents_test

import (
	"math"
	"testing"

	"streamscale/agents"
	"streamscale/env"
)

// rates is an in-memory workload, events/s per step.
type rates []float64

func (r rates) Len() int           { return len(r) }
func (r rates) Rate(i int) float64 { return r[i] }

// diurnal is a daily cycle of 288 steps (one 5-minute trace window per
// step, as the traces are replayed) between 400 and 4,400 messages/s.
func diurnal(n int) rates {
	r := make(rates, n)
	for i := range r {
		r[i] = 2400 + 2000*math.Sin(2*math.Pi*float64(i)/288)
	}
	return r
}

// task is one hand-built task row: allocation (millicores), offered load
// and processed/input ratio.
type task struct{ cpu, rho, ratio float64 }

// obsOf builds an observation with the given task rows (MaxCPU 10,000),
// application p95 (ms, for an SLO of sloMS) and sink throughput (msg/s).
func obsOf(tasks []task, p95MS, sloMS, thrp float64) env.Observation {
	o := env.Observation{
		App:    make([]float64, env.AppFeatures),
		Server: make([]float64, env.ServerFeatures),
		Task:   make([]float64, len(tasks)*env.TaskFeatures),
	}
	total := 0.0
	for k, tk := range tasks {
		row := o.Task[k*env.TaskFeatures : (k+1)*env.TaskFeatures]
		row[env.TaskCPU] = tk.cpu / 10000
		row[env.TaskDemandPerCPU] = tk.rho
		row[env.TaskThroughputRatio] = tk.ratio
		total += tk.cpu
	}
	o.App[env.AppP95Latency] = p95MS / sloMS
	o.App[env.AppTotalCPU] = total / (float64(len(tasks)) * 10000)
	o.App[env.AppThroughput] = math.Log1p(thrp)
	return o
}

// episode runs ctl for a whole episode of cfg and returns the share of
// steps that violated the SLO and the mean total allocation.
func episode(t testing.TB, cfg env.Config, ctl agents.Controller, seed uint64) (violations, meanCPU float64) {
	t.Helper()
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Reset(seed); err != nil {
		t.Fatal(err)
	}
	obs, _, err := e.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	steps, viol, cpu := 0, 0, 0.0
	for {
		a, err := ctl.Act(obs)
		if err != nil {
			t.Fatal(err)
		}
		var tr bool
		var info env.Info
		obs, _, _, tr, info, err = e.StepAction(a)
		if err != nil {
			t.Fatal(err)
		}
		steps++
		if info.Violated {
			viol++
		}
		cpu += info.TotalCPU
		if tr {
			break
		}
	}
	return float64(viol) / float64(steps), cpu / float64(steps)
}
