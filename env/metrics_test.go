package env

import (
	"math"
	"slices"
	"testing"
)

// measuredEnv is the PRED scenario on placement 7 with the given metric
// noise and lag.
func measuredEnv(t testing.TB, noise float64, lag int, steps int) *Env {
	t.Helper()
	cfg, err := EdgeConfig("pred", 7, diurnal(steps))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Physics.MetricNoise, cfg.Physics.MetricLagSteps = noise, lag
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// observations runs a fixed action schedule and returns every observation
// (the Reset one first) and every Info, copied.
func observations(t testing.TB, e *Env, seed uint64, steps int) ([]Observation, []Info) {
	t.Helper()
	cp := func(o Observation) Observation {
		return Observation{App: slices.Clone(o.App), Server: slices.Clone(o.Server), Task: slices.Clone(o.Task)}
	}
	obs, info, err := e.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	os, infos := []Observation{cp(obs)}, []Info{info}
	act := make([]int, e.NumTasks())
	for s := 0; s < steps; s++ {
		for k := range act {
			act[k] = []int{4, 2, 2, 3, 1, 0, 2, 4, 2}[(s/5+k)%9]
		}
		sr, err := e.Step(Action{Choices: act})
		if err != nil {
			t.Fatal(err)
		}
		info := sr.Info
		info.Queue = slices.Clone(info.Queue)
		os, infos = append(os, cp(sr.Obs)), append(infos, info)
	}
	return os, infos
}

func sameObs(a, b Observation) bool {
	return slices.Equal(a.App, b.App) && slices.Equal(a.Server, b.Server) && slices.Equal(a.Task, b.Task)
}

// TestExactMetrics: without noise and lag the measured features are the
// exact values Info reports, bit for bit.
func TestExactMetrics(t *testing.T) {
	e := measuredEnv(t, 0, 0, 120)
	slo := e.SLOMS() / 1000
	os, infos := observations(t, e, 3, 120)
	for s := 1; s < len(os); s++ {
		o, info := os[s], infos[s]
		p95, mean := info.P95MS/1000, info.MeanMS/1000
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"p95", o.App[AppP95Latency], clip(p95/slo, 0, 10)},
			{"mean", o.App[AppMeanLatency], clip(mean/slo, 0, 10)},
			{"throughput", o.App[AppThroughput], log1p(info.Throughput)},
			{"total queue", o.App[AppTotalQueue], log1p(sum(info.Queue))},
		} {
			if math.Abs(c.got-c.want) > 1e-12 {
				t.Fatalf("step %d: %s feature %v, want %v", s, c.name, c.got, c.want)
			}
		}
		for k, q := range info.Queue {
			if got := o.Task[k*TaskFeatures+TaskQueue]; got != log1p(q) {
				t.Fatalf("step %d task %d: queue feature %v, want log1p(%v)", s, k, got, q)
			}
		}
	}
}

// TestMetricNoiseSeeded: the noise is a function of the Reset seed only.
func TestMetricNoiseSeeded(t *testing.T) {
	a, _ := observations(t, measuredEnv(t, 0.1, 1, 60), 5, 60)
	b, _ := observations(t, measuredEnv(t, 0.1, 1, 60), 5, 60)
	c, _ := observations(t, measuredEnv(t, 0.1, 1, 60), 6, 60)
	exact, _ := observations(t, measuredEnv(t, 0, 1, 60), 5, 60)
	differ, noisy := false, false
	for s := range a {
		if !sameObs(a[s], b[s]) {
			t.Fatalf("step %d: same seed gave different observations", s)
		}
		differ = differ || !sameObs(a[s], c[s])
		noisy = noisy || !sameObs(a[s], exact[s])
	}
	if !differ || !noisy {
		t.Fatalf("different seed differs %v, noise changes the observation %v", differ, noisy)
	}
	// Reusing an Env: Reset with the same seed replays the same noise.
	e := measuredEnv(t, 0.1, 1, 60)
	observations(t, e, 9, 20)
	if d, _ := observations(t, e, 5, 60); !sameObs(d[30], a[30]) {
		t.Fatal("Reset did not reseed the metric noise")
	}
	// The noise leaves the exact features and the reward alone.
	_, ia := observations(t, measuredEnv(t, 0.1, 1, 60), 5, 60)
	_, ix := observations(t, measuredEnv(t, 0, 0, 60), 5, 60)
	for s := range ia {
		if ia[s].Reward != ix[s].Reward || ia[s].P95MS != ix[s].P95MS {
			t.Fatalf("step %d: metric noise changed the reward or Info", s)
		}
		for k := 0; k < len(a[s].Task)/TaskFeatures; k++ {
			for _, f := range []int{TaskCPU, TaskHostCPUUtil, TaskHostFreeCPU} {
				if i := k*TaskFeatures + f; a[s].Task[i] != exact[s].Task[i] {
					t.Fatalf("step %d task %d: exact feature %d is noisy", s, k, f)
				}
			}
		}
		if !slices.Equal(a[s].Server, exact[s].Server) {
			t.Fatalf("step %d: server features are noisy", s)
		}
	}
}

// TestMetricLag: with a lag of one step the measured features report the
// previous step's metrics; the exact ones the current state.
func TestMetricLag(t *testing.T) {
	now, _ := observations(t, measuredEnv(t, 0, 0, 60), 1, 60)
	lag, _ := observations(t, measuredEnv(t, 0, 1, 60), 1, 60)
	measured := []int{TaskInputRate, TaskDemand, TaskThroughput, TaskQueue, TaskThroughputRatio, TaskQueuePressure,
		TaskDemandPerCPU, TaskLatency, TaskProcLatency, TaskIORatio}
	for s := 2; s < len(now); s++ {
		for k := 0; k < len(now[s].Task)/TaskFeatures; k++ {
			for _, f := range measured {
				i := k*TaskFeatures + f
				if lag[s].Task[i] != now[s-1].Task[i] {
					t.Fatalf("step %d task %d feature %d: %v, want the previous step's %v", s, k, f, lag[s].Task[i], now[s-1].Task[i])
				}
			}
			if i := k*TaskFeatures + TaskCPU; lag[s].Task[i] != now[s].Task[i] {
				t.Fatalf("step %d task %d: the allocation is lagged", s, k)
			}
		}
		for _, f := range []int{AppMeanLatency, AppP95Latency, AppSLOMargin, AppP95Trend, AppTotalQueue, AppThroughput} {
			if lag[s].App[f] != now[s-1].App[f] {
				t.Fatalf("step %d app feature %d: %v, want %v", s, f, lag[s].App[f], now[s-1].App[f])
			}
		}
	}
	// Before a step has been measured the observation reports Reset's.
	if !slices.Equal(lag[1].App[:AppP95Trend], now[0].App[:AppP95Trend]) {
		t.Fatalf("first lagged observation %v, want Reset's %v", lag[1].App, now[0].App)
	}
}

// TestObservationBounds checks the normalized features: every one inside
// its Box, the shares in [0, 1], the memory features constant over an
// episode without re-planning and complementary, the task counts summing
// to the app's tasks.
func TestObservationBounds(t *testing.T) {
	for _, noise := range []float64{0, 0.3} {
		e := measuredEnv(t, noise, 2, 200)
		sp := e.Spaces()
		os, _ := observations(t, e, 4, 200)
		n := float64(e.NumTasks())
		for s, o := range os {
			for key, x := range map[string][]float64{"app": o.App, "server": o.Server, "task": o.Task} {
				if err := sp.Observation[key].Contains(x); err != nil {
					t.Fatalf("noise %v step %d %s: %v", noise, s, key, err)
				}
			}
			count := 0.0
			for srv := 0; srv < len(o.Server)/ServerFeatures; srv++ {
				row := o.Server[srv*ServerFeatures : (srv+1)*ServerFeatures]
				if row[ServerFreeMem] < 0 || row[ServerFreeMem] > 1 || math.Abs(row[ServerFreeMem]+row[ServerMemUtil]-1) > 1e-12 {
					t.Fatalf("step %d server %d: memory %v used, %v free", s, srv, row[ServerMemUtil], row[ServerFreeMem])
				}
				if s > 0 && row[ServerFreeMem] != os[0].Server[srv*ServerFeatures+ServerFreeMem] {
					t.Fatalf("step %d server %d: free memory changed without a re-plan", s, srv)
				}
				count += row[ServerTaskCount] * n
			}
			if math.Abs(count-n) > 1e-9 {
				t.Fatalf("step %d: task counts sum to %v tasks, want %v", s, count, n)
			}
			for k := 0; k < int(n); k++ {
				row := o.Task[k*TaskFeatures : (k+1)*TaskFeatures]
				if math.Abs(row[TaskHostFreeCPU]+row[TaskHostCPUUtil]-1) > 1e-12 {
					t.Fatalf("step %d task %d: host %v used, %v free", s, k, row[TaskHostCPUUtil], row[TaskHostFreeCPU])
				}
			}
			// The app's CPU is a share of its servers', not the mean again.
			if s > 0 && o.App[AppTotalCPU] == o.App[AppMeanCPU] {
				t.Fatalf("step %d: total CPU %v duplicates the mean", s, o.App[AppTotalCPU])
			}
		}
	}
}

// TestDemandPerCPU holds the offered-load feature against its definition:
// log(1 + λ·s̄) with s̄ the measured mean service time, clipped at ρ = 10.
func TestDemandPerCPU(t *testing.T) {
	e := measuredEnv(t, 0, 0, 50)
	os, _ := observations(t, e, 1, 50)
	o := os[len(os)-1]
	slo := e.SLOMS() / 1000
	for k := 0; k < e.NumTasks(); k++ {
		row := o.Task[k*TaskFeatures : (k+1)*TaskFeatures]
		lambda := math.Expm1(row[TaskInputRate])
		s := row[TaskProcLatency] * slo
		want := math.Log1p(min(lambda*s, 10))
		if math.Abs(row[TaskDemandPerCPU]-want) > 1e-9 {
			t.Fatalf("task %d: demand/CPU %v, want log(1 + %v·%v) = %v", k, row[TaskDemandPerCPU], lambda, s, want)
		}
		if sel := e.cfg.App.Tasks[k].Selectivity; sel == 1 && math.Abs(row[TaskIORatio]-0.5) > 0.05 {
			t.Fatalf("task %d: I/O ratio %v of a selectivity-1 task far from 1/2", k, row[TaskIORatio])
		}
	}
}

// TestMetricSnapshot stops a noisy, lagged episode midway, restores it
// into a fresh Env and checks the observations continue bit for bit.
func TestMetricSnapshot(t *testing.T) {
	a := measuredEnv(t, 0.2, 2, 120)
	a.Reset(7)
	act := make([]int, a.NumTasks())
	for s := 0; s < 50; s++ {
		for k := range act {
			act[k] = (s*7 + k) % 5
		}
		a.Step(Action{Choices: act})
	}
	snap, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b := measuredEnv(t, 0.2, 2, 120)
	if err := b.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	for s := 50; s < 120; s++ {
		for k := range act {
			act[k] = (s*7 + k) % 5
		}
		ra, _ := a.Step(Action{Choices: act})
		oa := Observation{App: slices.Clone(ra.Obs.App), Server: slices.Clone(ra.Obs.Server), Task: slices.Clone(ra.Obs.Task)}
		rb, _ := b.Step(Action{Choices: act})
		if !sameObs(oa, rb.Obs) {
			t.Fatalf("step %d: restored env's observation diverged", s)
		}
	}
	// A snapshot of an Env with another lag is refused.
	c := measuredEnv(t, 0.2, 1, 120)
	if err := c.UnmarshalBinary(snap); err == nil {
		t.Fatal("snapshot of another metric lag accepted")
	}
}

// TestMetricsAllocFree: a step with metric noise and lag allocates
// nothing (BenchmarkStep checks the deterministic physics).
func TestMetricsAllocFree(t *testing.T) {
	e := measuredEnv(t, 0.05, 3, 1000)
	e.Reset(1)
	act := Action{Choices: make([]int, e.NumTasks())}
	for k := range act.Choices {
		act.Choices[k] = NoChange
	}
	if n := testing.AllocsPerRun(200, func() { e.Step(act) }); n != 0 {
		t.Fatalf("%v allocations per step", n)
	}
}
