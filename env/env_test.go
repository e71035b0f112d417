package env

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func newTestEnv(t testing.TB, profile string, placementSeed uint64, w Workload) *Env {
	t.Helper()
	cfg, err := EdgeConfig(profile, placementSeed, w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// diurnal is a deterministic test workload with a daily shape and peaks
// above what 500 millicores serve.
func diurnal(n int) rates {
	r := make(rates, n)
	for i := range r {
		r[i] = 2400 + 2000*math.Sin(2*math.Pi*float64(i)/288)
	}
	return r
}

// trajectory runs a seeded random policy for steps and hashes every
// per-step metric and observation bit.
func trajectory(t testing.TB, e *Env, seed uint64, steps int) [32]byte {
	t.Helper()
	h := sha256.New()
	r := rand.New(rand.NewPCG(seed, 1))
	obs, _, err := e.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	put := func(xs ...float64) {
		for _, x := range xs {
			binary.Write(h, binary.LittleEndian, math.Float64bits(x))
		}
	}
	put(obs.App...)
	act := make([]int, e.NumTasks())
	for s := 0; s < steps; s++ {
		for k := range act {
			act[k] = r.IntN(5)
		}
		sr, err := e.Step(Action{Choices: act})
		obs := sr.Obs
		rew := sr.Reward
		tr := sr.Truncated
		info := sr.Info
		if err != nil {
			t.Fatal(err)
		}
		put(rew, info.P95MS, info.MeanMS, info.Throughput, info.TotalCPU)
		put(info.Applied...)
		put(info.Queue...)
		put(obs.App...)
		put(obs.Server...)
		put(obs.Task...)
		if tr {
			break
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func TestDeterminism(t *testing.T) {
	w := diurnal(600)
	for _, p := range []string{"pred", "etl"} {
		a := trajectory(t, newTestEnv(t, p, 7, w), 3, 600)
		b := trajectory(t, newTestEnv(t, p, 7, w), 3, 600)
		if a != b {
			t.Errorf("%s: same seed gave different trajectories", p)
		}
		// The same Env, reset, replays identically.
		e := newTestEnv(t, p, 7, w)
		trajectory(t, e, 5, 100)
		if c := trajectory(t, e, 3, 600); c != a {
			t.Errorf("%s: reset did not restore the initial state", p)
		}
		if c := trajectory(t, newTestEnv(t, p, 8, w), 3, 600); c == a {
			t.Errorf("%s: different placement seed gave the same trajectory", p)
		}
		if c := trajectory(t, newTestEnv(t, p, 7, w), 4, 600); c == a {
			t.Errorf("%s: different action seed gave the same trajectory", p)
		}
	}
}

// TestEnvChecker checks the Gymnasium contract: spaces consistent with the
// observations, every observation finite and inside its Box, truncation at
// the episode length, terminated always false, errors outside an episode.
func TestEnvChecker(t *testing.T) {
	for _, p := range []string{"pred", "etl"} {
		e := newTestEnv(t, p, 42, diurnal(300))
		sp := e.Spaces()
		if strings.Join(sp.Keys, ",") != "app,server,task" {
			t.Fatalf("keys %v", sp.Keys)
		}
		if len(sp.Nvec) != e.NumTasks() || sp.FlatSize() != AppFeatures+7*ServerFeatures+e.NumTasks()*TaskFeatures {
			t.Fatalf("%s: spaces inconsistent: nvec %d, flat %d", p, len(sp.Nvec), sp.FlatSize())
		}
		if _, err := e.Step(Action{Choices: make([]int, e.NumTasks())}); !errors.Is(err, ErrNotReset) {
			t.Fatalf("step before reset: %v", err)
		}
		check := func(o Observation, when string) {
			for key, x := range map[string][]float64{"app": o.App, "server": o.Server, "task": o.Task} {
				if err := sp.Observation[key].Contains(x); err != nil {
					t.Fatalf("%s %s %s: %v", p, when, key, err)
				}
			}
		}
		obs, info, err := e.Reset(1)
		if err != nil {
			t.Fatal(err)
		}
		check(obs, "reset")
		if info.Step != -1 || info.TotalCPU != 500*float64(e.NumTasks()) {
			t.Fatalf("reset info %+v", info)
		}
		r := rand.New(rand.NewPCG(9, 9))
		act := make([]int, e.NumTasks())
		for s := 0; ; s++ {
			for k := range act {
				act[k] = r.IntN(5)
			}
			sr, err := e.Step(Action{Choices: act})
			obs := sr.Obs
			rew := sr.Reward
			term := sr.Terminated
			trunc := sr.Truncated
			info := sr.Info
			if err != nil {
				t.Fatal(err)
			}
			check(obs, fmt.Sprintf("step %d", s))
			if term {
				t.Fatal("terminated must stay false")
			}
			if rew < -6 || rew > 2.5 || math.IsNaN(rew) {
				t.Fatalf("reward %v outside [-6, 2.5]", rew)
			}
			if info.Step != s {
				t.Fatalf("info step %d, want %d", info.Step, s)
			}
			if trunc != (s == 299) {
				t.Fatalf("truncated=%v at step %d", trunc, s)
			}
			if trunc {
				break
			}
		}
		if _, err := e.Step(Action{Choices: act}); !errors.Is(err, ErrEpisodeOver) {
			t.Fatalf("step after truncation: %v", err)
		}
	}
}

func TestInvalidActionChangesNothing(t *testing.T) {
	w := diurnal(100)
	a := newTestEnv(t, "etl", 7, w)
	b := newTestEnv(t, "etl", 7, w)
	a.Reset(1)
	b.Reset(1)
	n := a.NumTasks()
	good := make([]int, n)
	for k := range good {
		good[k] = 4
	}
	bad := []Action{
		{Choices: make([]int, n-1)},
		{Choices: append(make([]int, n-1), 5)},
		{Choices: append(make([]int, n-1), -1)},
		{Targets: make([]float64, n+1)},
		{Targets: append(make([]float64, n-1), math.NaN())},
		{Targets: append(make([]float64, n-1), math.Inf(1))},
		{Choices: good, Targets: make([]float64, n)},
		{},
	}
	for s := 0; s < 20; s++ {
		for _, act := range bad {
			if _, err := a.Step(act); err == nil {
				t.Fatalf("invalid action %+v accepted", act)
			}
		}
		sr, err := a.Step(Action{Choices: good})
		ra := sr.Reward
		ia := sr.Info
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := b.Step(Action{Choices: good})
		rb := sb.Reward
		ib := sb.Info
		if ra != rb || ia.P95MS != ib.P95MS || a.StepIndex() != b.StepIndex() {
			t.Fatalf("step %d: invalid actions changed the state", s)
		}
	}
	if _, err := a.Step(Action{Choices: make([]int, n-1)}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("want %d", n)) {
		t.Fatalf("error should name the expected length: %v", err)
	}
}

func TestInvalidScenario(t *testing.T) {
	w := constRate(100, 10)
	base := func() Config {
		c, err := EdgeConfig("pred", 1, w)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct {
		name string
		mut  func(c *Config)
		want string
	}{
		{"zero SLO", func(c *Config) { c.App.SLOMS = 0 }, "SLO"},
		{"negative SLO", func(c *Config) { c.App.SLOMS = -5 }, "SLO"},
		{"missing server", func(c *Config) { c.Placement[2] = 99 }, "missing server"},
		{"cycle", func(c *Config) { c.App.Edges = append(c.App.Edges, Edge{5, 0}) }, "cycle"},
		{"no sink", func(c *Config) { c.App.Sinks = nil }, "no sink"},
		{"dangling task", func(c *Config) { c.App.Sinks = []int{3} }, "not a sink"},
		{"no source", func(c *Config) { c.App.Sources = nil }, "no source"},
		{"bad edge", func(c *Config) { c.App.Edges[0].To = 17 }, "missing task"},
		{"placement length", func(c *Config) { c.Placement = c.Placement[:2] }, "placement has 2"},
		{"zero demand", func(c *Config) { c.App.Tasks[1].MIPSPerEvent = 0 }, "MIPS per event"},
		{"NaN selectivity", func(c *Config) { c.App.Tasks[1].Selectivity = math.NaN() }, "selectivity"},
		{"overfull server", func(c *Config) { c.InitialCPU = 9000; c.Servers[c.Placement[0]].CPU = 1000 }, "exceed capacity"},
		{"bad CPU bounds", func(c *Config) { c.MinCPU, c.MaxCPU = 600, 550 }, "CPU bounds"},
		{"no workload", func(c *Config) { c.Workload = nil }, "workload"},
		{"empty workload", func(c *Config) { c.Workload = rates{} }, "workload"},
		{"bad link", func(c *Config) { c.Network.Links[0].BandwidthBps = 0 }, "bandwidth"},
		{"unreachable", func(c *Config) {
			c.Network.Links = nil
		}, "no network route"},
		{"server switch", func(c *Config) { c.Servers[0].Switch = 40 }, "missing switch"},
		{"reward", func(c *Config) { r := DefaultReward(); r.Low, r.High = 1, 0; c.Reward = &r }, "reward clip"},
	}
	for _, tc := range cases {
		c := base()
		tc.mut(&c)
		_, err := New(c)
		if err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an invalid-scenario error mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(base()); err != nil {
		t.Fatalf("base scenario: %v", err)
	}
	if _, err := Profile("nope"); err == nil {
		t.Fatal("unknown profile accepted")
	}
}

func TestProjection(t *testing.T) {
	// Two tasks on one 4,000-millicore server, one alone elsewhere.
	app := App{Name: "p", SLOMS: 100, Sources: []int{0}, Sinks: []int{2},
		Tasks: []Task{{Name: "a", MIPSPerEvent: 0.1, Selectivity: 1, OutBytes: 100, MemoryMB: 1}, {Name: "b", MIPSPerEvent: 0.1, Selectivity: 1, OutBytes: 100, MemoryMB: 1}, {Name: "c", MIPSPerEvent: 0.1, Selectivity: 1, OutBytes: 100, MemoryMB: 1}},
		Edges: []Edge{{0, 1}, {1, 2}}}
	net := HexGrid(1, 2, 1e9, 1)
	servers := []Server{{Name: "x", CPU: 4000, MIPS: 8000, RAMMB: 100, Switch: 0}, {Name: "y", CPU: 20000, MIPS: 40000, RAMMB: 100, Switch: 1}}
	cfg := Config{App: app, Network: net, Servers: servers, Placement: []int{0, 0, 1}, Workload: constRate(10, 10), InitialCPU: 1500}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		targets, want []float64
	}{
		{[]float64{3000, 3000, 3000}, []float64{2500, 1500, 3000}}, // a's increase takes the free 1,000; b gets none
		{[]float64{500, 3500, 12000}, []float64{500, 3500, 10000}}, // reduction first frees room for b; c clipped to max
		{[]float64{100, 100, 100}, []float64{500, 500, 500}},       // clipped to min
		{[]float64{1500, 1500, 1500}, []float64{1500, 1500, 1500}}, // no change
		{[]float64{1000, 5000, 1500}, []float64{1000, 3000, 1500}}, // b limited to capacity − a
	} {
		e.Reset(0)
		sr, err := e.Step(Action{Targets: tc.targets})
		info := sr.Info
		if err != nil {
			t.Fatal(err)
		}
		for k := range tc.want {
			if info.Applied[k] != tc.want[k] {
				t.Errorf("targets %v: applied %v, want %v", tc.targets, info.Applied, tc.want)
				break
			}
		}
	}
	// Delta actions share the projection: +500 on both co-located tasks.
	e.Reset(0)
	sr, _ := e.Step(Action{Choices: []int{4, 4, 4}})
	info := sr.Info
	if info.Applied[0] != 2000 || info.Applied[1] != 2000 || info.Requested[1] != 2000 {
		t.Fatalf("delta projection: requested %v applied %v", info.Requested, info.Applied)
	}
	sr, _ = e.Step(Action{Choices: []int{4, 4, 0}})
	info = sr.Info
	if want := []float64{2000, 2000, 1500}; info.Applied[0] != want[0] || info.Applied[1] != want[1] || info.Applied[2] != want[2] {
		t.Fatalf("full server: applied %v, want %v", info.Applied, want)
	}
}

// TestFeatureNames: one name per element of the flattened observation, in
// its order, naming the feature the index constants give.
func TestFeatureNames(t *testing.T) {
	cfg, err := EdgeConfig("etl", 3, diurnal(10))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs, _, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, k := range e.Config().App.Tasks {
		tasks = append(tasks, k.Name)
	}
	m := len(obs.Server) / ServerFeatures
	names := FeatureNames(tasks, m)
	if len(names) != len(obs.Flatten(nil)) {
		t.Fatalf("%d names for %d features", len(names), len(obs.Flatten(nil)))
	}
	for i, want := range map[int]string{
		AppP95Latency: "app/p95_latency", AppThroughput: "app/throughput",
		AppFeatures + 2*ServerFeatures + ServerFreeMem:              "server2/free_mem",
		AppFeatures + m*ServerFeatures + 1*TaskFeatures + TaskQueue: tasks[1] + "/queue",
		len(names) - 1: tasks[len(tasks)-1] + "/host_free_cpu",
	} {
		if names[i] != want {
			t.Errorf("name %d %q, want %q", i, names[i], want)
		}
	}
}
