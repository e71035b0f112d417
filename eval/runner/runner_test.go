package runner

import (
	"context"
	"errors"
	"math"
	"testing"

	"streamscale/env"
	"streamscale/eval/controllers"
)

// ramp is a workload that rises from 1,000 to 5,000 events/s.
type ramp int

func (r ramp) Len() int              { return int(r) }
func (r ramp) Rate(step int) float64 { return 1000 + 4000*float64(step%int(r))/float64(r) }

func spec(t testing.TB, ctrl string, steps int) Spec {
	t.Helper()
	c, err := controllers.New(controllers.Options{}).Parse(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Profile: "pred", TraceName: "ramp", Workload: ramp(200), PlacementSeed: 101, Seed: 3, Steps: steps, Controller: c}
}

// TestRunMatchesManualLoop holds Run against the plain Gym loop.
func TestRunMatchesManualLoop(t *testing.T) {
	s := spec(t, "threshold", 150)
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := Scenario(s)
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Controller.New(e.Config())
	obs, _, _ := e.Reset(s.Seed)
	c.Reset(s.Seed)
	var p95, cpu, thr, rew float64
	viol := 0
	for i := 0; i < 150; i++ {
		a, err := c.Act(obs)
		if err != nil {
			t.Fatal(err)
		}
		var info env.Info
		var r float64
		obs, r, _, _, info, err = e.StepAction(a)
		if err != nil {
			t.Fatal(err)
		}
		iv := res.Intervals[i]
		if iv.Step != i || iv.P95MS != info.P95MS || iv.TotalCPU != info.TotalCPU || iv.Reward.Total != r || iv.Applied[2] != info.Applied[2] {
			t.Fatalf("interval %d: %+v, env says p95 %v cpu %v reward %v", i, iv, info.P95MS, info.TotalCPU, r)
		}
		p95 += info.P95MS
		cpu += info.TotalCPU
		thr += info.Throughput
		rew += r
		if info.Violated {
			viol++
		}
	}
	sum := res.Summary
	if sum.Steps != 150 || sum.MeanP95MS != p95/150 || sum.MeanCPU != cpu/150 || sum.MeanThroughput != thr/150 ||
		sum.TotalReward != rew || sum.ViolationRate != float64(viol)/150 {
		t.Errorf("summary %+v", sum)
	}
	if len(res.Tasks) != e.NumTasks() || len(res.Placement) != e.NumTasks() || res.SLOMS != 180 {
		t.Errorf("result metadata %v %v %v", res.Tasks, res.Placement, res.SLOMS)
	}
}

func TestRunDeterministic(t *testing.T) {
	a, err := Run(context.Background(), spec(t, "vrebalance", 130))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(context.Background(), spec(t, "vrebalance", 130))
	if a.TrajectorySHA256 != b.TrajectorySHA256 || a.Summary != b.Summary || a.ConfigSHA256 != b.ConfigSHA256 {
		t.Error("two runs of one spec differ")
	}
	s := spec(t, "vrebalance", 130)
	s.PlacementSeed = 102
	c, _ := Run(context.Background(), s)
	if c.TrajectorySHA256 == a.TrajectorySHA256 || c.ConfigSHA256 == a.ConfigSHA256 {
		t.Error("another placement gave the same trajectory or config hash")
	}
}

func TestFullTraceByDefault(t *testing.T) {
	res, err := Run(context.Background(), spec(t, "static:3000", 0))
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Steps != 200 || len(res.Intervals) != 200 {
		t.Errorf("%d intervals, want the workload's 200", res.Summary.Steps)
	}
}

// TestTrajectoryHashCoversEveryField changes one field at a time.
func TestTrajectoryHashCoversEveryField(t *testing.T) {
	res, err := Run(context.Background(), spec(t, "static:1000", 5))
	if err != nil {
		t.Fatal(err)
	}
	base := TrajectoryHash(res.Intervals)
	mutations := []func(*Interval){
		func(iv *Interval) { iv.Step++ },
		func(iv *Interval) { iv.Offered = math.Nextafter(iv.Offered, 1e9) },
		func(iv *Interval) { iv.Throughput++ },
		func(iv *Interval) { iv.SinkEvents++ },
		func(iv *Interval) { iv.P95MS++ },
		func(iv *Interval) { iv.MeanMS++ },
		func(iv *Interval) { iv.Violated = !iv.Violated },
		func(iv *Interval) { iv.TotalCPU++ },
		func(iv *Interval) { iv.InFlight++ },
		func(iv *Interval) { iv.Reward.SLO++ },
		func(iv *Interval) { iv.Reward.Risk++ },
		func(iv *Interval) { iv.Reward.Resource++ },
		func(iv *Interval) { iv.Reward.Progress++ },
		func(iv *Interval) { iv.Reward.Churn++ },
		func(iv *Interval) { iv.Reward.Recovery++ },
		func(iv *Interval) { iv.Reward.Reconf++ },
		func(iv *Interval) { iv.Reward.Total++ },
		func(iv *Interval) { iv.Applied[0]++ },
		func(iv *Interval) { iv.Queue[len(iv.Queue)-1]++ },
	}
	for i, m := range mutations {
		ivs := make([]Interval, len(res.Intervals))
		for k, iv := range res.Intervals {
			iv.Applied = append([]float64(nil), iv.Applied...)
			iv.Queue = append([]float64(nil), iv.Queue...)
			ivs[k] = iv
		}
		m(&ivs[3])
		if TrajectoryHash(ivs) == base {
			t.Errorf("mutation %d does not change the hash", i)
		}
	}
	if TrajectoryHash(res.Intervals) != base {
		t.Error("hashing changed the intervals")
	}
}

func TestRunErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, spec(t, "static:1000", 10)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	s := spec(t, "static:1000", -1)
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("negative steps accepted")
	}
	s = spec(t, "static:1000", 10)
	s.Profile = "nope"
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("unknown profile accepted")
	}
	s = spec(t, "static:1000", 10)
	s.Workload = nil
	if _, err := Run(context.Background(), s); err == nil {
		t.Error("nil workload accepted")
	}
}

func TestSummarizeEmpty(t *testing.T) {
	if s := Summarize(nil); s != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v", s)
	}
}
