package runner

import (
	"context"
	"errors"
	"math"
	"reflect"
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
	cfg, _ := Config(s)
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Controller.Build(e.Config())
	c := a.Controller()
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
		var sr env.StepResult
		sr, err = e.Step(a)
		obs = sr.Obs
		r = sr.Reward
		info = sr.Info
		if err != nil {
			t.Fatal(err)
		}
		iv := res.Intervals[i]
		if iv.Step != int64(i) || iv.P95MS != info.P95MS || iv.TotalCPU != info.TotalCPU || iv.Reward != r || iv.Applied[2] != info.Applied[2] {
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
	// One mutation per field, found by reflection, so a new field is
	// covered (or fails here) without editing the test; slices also
	// change length.
	var mutations []func(*Interval)
	typ := reflect.TypeOf(Interval{})
	for f := range typ.NumField() {
		mutations = append(mutations, func(iv *Interval) {
			v := reflect.ValueOf(iv).Elem().Field(f)
			switch v.Kind() {
			case reflect.Int64:
				v.SetInt(v.Int() + 1)
			case reflect.Float64:
				v.SetFloat(math.Nextafter(v.Float(), math.Inf(1)))
			case reflect.Bool:
				v.SetBool(!v.Bool())
			case reflect.Slice:
				v.Index(v.Len() - 1).SetFloat(v.Index(v.Len()-1).Float() + 1)
			default:
				t.Fatalf("field %s: kind %s", typ.Field(f).Name, v.Kind())
			}
		})
		if typ.Field(f).Type.Kind() == reflect.Slice {
			mutations = append(mutations, func(iv *Interval) {
				v := reflect.ValueOf(iv).Elem().Field(f)
				v.Set(reflect.Append(v, reflect.ValueOf(0.0)))
			})
		}
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

// TestFootprint checks reserved CPU and active servers on a hand-worked
// case: servers of 1,000, 2,000 and 4,000 millicores; task 0 on server 0,
// task 1 split 3:1 over servers 1 and 2.
func TestFootprint(t *testing.T) {
	servers := []env.Server{{CPU: 1000}, {CPU: 2000}, {CPU: 4000}}
	plan := [][]env.Replica{{{Server: 0, Share: 1}}, {{Server: 1, Share: 0.75}, {Server: 2, Share: 0.25}}}
	for _, tc := range []struct {
		name    string
		shared  bool
		plan    [][]env.Replica
		applied []float64
		mc      float64
		active  int
	}{
		// Reservations: 600 + 800 millicores held; replicas of 600, 600
		// and 200 millicores on three servers.
		{"reserved", false, plan, []float64{600, 800}, 1400, 3},
		// Shared CPU: all three servers give their whole CPU.
		{"shared", true, plan, []float64{1000, 6000}, 7000, 3},
		// A zero share holds no CPU: server 2 is idle.
		{"shared, zero share", true, [][]env.Replica{{{Server: 0, Share: 1}}, {{Server: 1, Share: 1}, {Server: 2, Share: 0}}}, []float64{1000, 2000}, 3000, 2},
		// Both tasks on server 1.
		{"shared, one server", true, [][]env.Replica{{{Server: 1, Share: 1}}, {{Server: 1, Share: 1}}}, []float64{500, 1500}, 2000, 1},
		// A task without CPU leaves its server inactive.
		{"reserved, idle task", false, plan, []float64{0, 800}, 800, 2},
	} {
		mc, n := Footprint(servers, tc.shared, tc.plan, tc.applied)
		if mc != tc.mc || n != tc.active {
			t.Errorf("%s: %v millicores on %d servers, want %v on %d", tc.name, mc, n, tc.mc, tc.active)
		}
	}
}

// TestRunVerticalFootprint: a vertical controller reserves what it applies,
// on the servers of its placement.
func TestRunVerticalFootprint(t *testing.T) {
	res, err := Run(context.Background(), spec(t, "threshold", 60))
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[int]bool{}
	for _, s := range res.Placement {
		distinct[s] = true
	}
	for _, iv := range res.Intervals {
		if iv.ReservedCPU != iv.TotalCPU || iv.ActiveServers != int64(len(distinct)) || iv.Replanned || iv.OverCapacity {
			t.Fatalf("interval %d: reserved %v (total %v), %d active servers (placement uses %d)", iv.Step, iv.ReservedCPU, iv.TotalCPU, iv.ActiveServers, len(distinct))
		}
	}
	if res.Horizontal || res.Summary.MeanReservedCPU != res.Summary.MeanCPU || res.Summary.Replans != 0 {
		t.Errorf("summary %+v", res.Summary)
	}
}

// TestRunCLASP runs CLASP on the horizontal PRED scenario: it re-plans the
// random placement at once, then holds whole servers (reserved CPU equals
// the simulator's shared CPU), and two runs are identical.
func TestRunCLASP(t *testing.T) {
	s := spec(t, "clasp", 120)
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Horizontal || res.Summary.Steps != 120 {
		t.Fatalf("horizontal %v, %d steps", res.Horizontal, res.Summary.Steps)
	}
	if !res.Intervals[0].Replanned || res.Summary.Replans < 1 {
		t.Error("CLASP did not deploy its own plan at the first interval")
	}
	for _, iv := range res.Intervals {
		if iv.ActiveServers < 1 || iv.ActiveServers > 7 || math.Abs(iv.ReservedCPU-iv.TotalCPU) > 1e-6*iv.TotalCPU {
			t.Fatalf("interval %d: reserved %v, shared CPU %v, %d servers", iv.Step, iv.ReservedCPU, iv.TotalCPU, iv.ActiveServers)
		}
	}
	if res.Summary.MeanThroughput <= 0 {
		t.Error("nothing delivered")
	}
	again, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if again.TrajectorySHA256 != res.TrajectorySHA256 || again.Summary != res.Summary || again.ConfigSHA256 != res.ConfigSHA256 {
		t.Error("two CLASP runs of one spec differ")
	}
	// The edge scenario of the same cell differs (shared CPU, request costs).
	v, _ := Run(context.Background(), spec(t, "static:1000", 120))
	if v.ConfigSHA256 == res.ConfigSHA256 {
		t.Error("CLASP ran on the edge scenario")
	}
	// CLASP's first plan replaces the random placement before anything
	// has run (no state, no queues), so the placement changes the scenario
	// but not the trajectory; the workload does.
	s.PlacementSeed = 102
	other, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if other.TrajectorySHA256 != res.TrajectorySHA256 || other.ConfigSHA256 == res.ConfigSHA256 {
		t.Error("placement 102: want the same CLASP trajectory on another scenario")
	}
	s.Workload = ramp(100)
	if w, _ := Run(context.Background(), s); w.TrajectorySHA256 == res.TrajectorySHA256 {
		t.Error("another workload gave the same CLASP trajectory")
	}
}

// TestConfigCarriesPhysics checks that a Spec's physics reach the env
// configuration, of either kind of controller, and its scenario name the
// result's key and config hash.
func TestConfigCarriesPhysics(t *testing.T) {
	phys, err := env.ScenarioPhysics(env.ScenarioRealistic)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctrl := range []string{"static:1000", "clasp"} {
		s := spec(t, ctrl, 20)
		s.Physics, s.Scenario = phys, env.ScenarioRealistic
		cfg, err := Config(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cfg.Physics, phys) {
			t.Errorf("%s: Config physics %+v, want %+v", ctrl, cfg.Physics, phys)
		}
		s.Controller = nil // the edge scenario itself
		if cfg, _ := Config(s); !reflect.DeepEqual(cfg.Physics, phys) {
			t.Errorf("edge scenario physics %+v, want %+v", cfg.Physics, phys)
		}
	}
	paper := spec(t, "static:1000", 20)
	realistic := paper
	realistic.Physics, realistic.Scenario = phys, env.ScenarioRealistic
	a, err := Run(context.Background(), paper)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), realistic)
	if err != nil {
		t.Fatal(err)
	}
	if b.Key.Scenario != env.ScenarioRealistic || a.Key.Scenario != "" {
		t.Errorf("keys %+v and %+v, want scenario realistic on the second only", a.Key, b.Key)
	}
	if a.ConfigSHA256 == b.ConfigSHA256 {
		t.Error("different physics gave the same config hash")
	}
}
