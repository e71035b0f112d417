package simvec

import (
	"slices"
	"strings"
	"testing"

	"streamscale/env"
	"streamscale/ppo"
	"streamscale/rng"
)

type rates []float64

func (r rates) Len() int           { return len(r) }
func (r rates) Rate(i int) float64 { return r[i] }

// TestFlattenAndAutoreset checks the flat layout (app, server, task), the
// action split per env, and the final observation and episode record of a
// truncated episode.
func TestFlattenAndAutoreset(t *testing.T) {
	w := rates{1000, 2000, 3000}
	var cfgs []env.Config
	for _, p := range []uint64{42, 37} {
		c, err := env.EdgeConfig("pred", p, w)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	var inner []*env.VecEnv
	for _, c := range cfgs {
		e, err := env.NewVec([]env.Config{c}, env.SameStep, 1)
		if err != nil {
			t.Fatal(err)
		}
		inner = append(inner, e)
	}
	v, err := New(inner, 2)
	if err != nil {
		t.Fatal(err)
	}
	if v.ObsSize() != env.AppFeatures+7*env.ServerFeatures+6*env.TaskFeatures || !slices.Equal(v.Nvec(), []int{5, 5, 5, 5, 5, 5}) {
		t.Fatalf("obs %d nvec %v", v.ObsSize(), v.Nvec())
	}
	obs := make([]float64, 2*v.ObsSize())
	if err := v.Reset(3, obs); err != nil {
		t.Fatal(err)
	}
	ref, _ := env.New(cfgs[1])
	o, _, _ := ref.Reset(EnvSeed(3, 1))
	if !slices.Equal(obs[v.ObsSize():], o.Flatten(nil)) {
		t.Fatal("env 1's flat observation is not app, server, task of its Reset(EnvSeed(3, 1))")
	}
	r := ppo.NewStepResult(2, v.ObsSize())
	acts := []int{4, 4, 4, 4, 4, 4, 0, 1, 2, 3, 4, 0}
	var last env.Observation
	for s := 0; s < 3; s++ {
		if err := v.Step(acts, r); err != nil {
			t.Fatal(err)
		}
		var sr env.StepResult
		sr, _ = ref.Step(env.Action{Choices: acts[6:]})
		last = sr.Obs
	}
	if !r.Truncated[0] || !r.Truncated[1] || len(r.Episodes) != 2 || r.Episodes[1].Length != 3 {
		t.Fatalf("truncation not reported: %+v", r)
	}
	if !slices.Equal(r.FinalObs[v.ObsSize():], last.Flatten(nil)) {
		t.Fatal("final observation of env 1 differs from a single env's last observation")
	}
	if err := v.Step(acts[:5], r); err == nil {
		t.Fatal("short action accepted")
	}
	if err := v.Reset(0, obs[:3]); err == nil {
		t.Fatal("short observation buffer accepted")
	}
}

func TestScenarios(t *testing.T) {
	phys, err := env.ScenarioPhysics(env.ScenarioRealistic)
	if err != nil {
		t.Fatal(err)
	}
	tr := TrainingScenarios("etl", phys)
	if len(tr) != 4 || tr[0].Trace != "taxi-train" || tr[3].RateMult != 2 || tr[3].PlacementSeed != 37 {
		t.Fatalf("training scenarios %+v", tr)
	}
	for _, d := range DevScenarios("etl", phys, nil) {
		if slices.Contains(TrainingPlacements, d.PlacementSeed) {
			t.Fatalf("dev placement %d is a training placement", d.PlacementSeed)
		}
	}
	// The physics reach the env configuration of both kinds.
	for _, sc := range []EnvSpec{tr[3], DevScenarios("etl", phys, nil)[0]} {
		c, err := sc.Config("", 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Physics != phys {
			t.Errorf("%+v: config physics %+v, want %+v", sc, c.Physics, phys)
		}
		if c.Reward != nil && *c.Reward != env.DefaultReward() {
			t.Errorf("%+v: reward %+v without an override", sc, *c.Reward)
		}
	}
	// A reward override reaches the env configuration, as a copy.
	r := env.DefaultReward()
	r.SpanPerTask = 4000
	sc := tr[0]
	sc.Reward = &r
	c, err := sc.Config("", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reward == nil || c.Reward.SpanPerTask != 4000 || c.Reward == &r {
		t.Errorf("reward override: config reward %+v", c.Reward)
	}
	if _, err := NewVec(nil, 2, "", 1, 1, nil); err == nil {
		t.Fatal("no scenarios accepted")
	}
	// More scenarios than environments would silently drop the extra ones.
	if _, err := NewVec(tr, 3, "", 1, 1, nil); err == nil || !strings.Contains(err.Error(), "scenarios 4–4 would never run") {
		t.Fatalf("4 scenarios on 3 envs: error %v", err)
	}
}

// TestEnvSeedsAreNamedStreams: env i's seed is the stream rng.TrainEnv+i
// of the root; envs and roots get different seeds.
func TestEnvSeedsAreNamedStreams(t *testing.T) {
	if EnvSeed(3, 1) != rng.Derive(3, rng.TrainEnv+"1") {
		t.Fatal("EnvSeed is not rng.Derive(root, rng.TrainEnv+i)")
	}
	if EnvSeed(3, 0) == EnvSeed(3, 1) || EnvSeed(3, 0) == EnvSeed(4, 0) {
		t.Fatal("environments or roots share a seed")
	}
}

// TestPlacements: the paper's two seeds first, then seeds that no
// development or evaluation scenario uses.
func TestPlacements(t *testing.T) {
	got := Placements(5)
	want := []uint64{42, 37, 2001, 2002, 2003}
	if !slices.Equal(got, want) {
		t.Fatalf("Placements(5) = %v, want %v", got, want)
	}
	if got := Placements(1); !slices.Equal(got, []uint64{42}) {
		t.Errorf("Placements(1) = %v", got)
	}
	for _, p := range got {
		if slices.Contains(DevPlacements, p) || (p >= 101 && p <= 110) {
			t.Errorf("training placement %d is a development or evaluation placement", p)
		}
	}
	scs := TrainingScenariosOn("pred", env.Physics{}, got, nil)
	if len(scs) != 10 || scs[0].RateMult != 1 || scs[5].RateMult != 2 || scs[6].PlacementSeed != 37 {
		t.Errorf("TrainingScenariosOn: %+v", scs)
	}
}

func TestParseTraceVariants(t *testing.T) {
	got, err := ParseTraceVariants("taxi-train:1, taxi-train:2,intel-train")
	want := []TraceVariant{{"taxi-train", 1}, {"taxi-train", 2}, {"intel-train", 1}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ParseTraceVariants = %v, %v, want %v", got, err, want)
	}
	if s := want[1].String(); s != "taxi-train:2" {
		t.Errorf("String() = %q", s)
	}
	for in, msg := range map[string]string{
		"":                          "empty",
		"taxi":                      "evaluation trace",
		"intel:1":                   "evaluation trace",
		"taxi-train:0":              "multiplier",
		"taxi-train:NaN":            "multiplier",
		"taxi-train:x":              "multiplier",
		"taxi-train:17":             "multiplier",
		"taxy-train":                "want one of",
		"taxi-train,taxi-train:1":   "twice",
		"taxi-train:2,,intel-train": "want one of",
	} {
		if _, err := ParseTraceVariants(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseTraceVariants(%q) error %v, want one containing %q", in, err, msg)
		}
	}
	// The default keeps the paper's scenarios in their order (the seeds of
	// the shipped policies depend on it).
	a := TrainingScenariosOn("etl", env.Physics{}, []uint64{42, 37}, nil)
	b := TrainingScenariosOn("etl", env.Physics{}, []uint64{42, 37}, PaperTraces)
	if len(a) != 4 || a[1].RateMult != 1 || a[1].PlacementSeed != 37 || a[2].RateMult != 2 || !slices.Equal(a, b) {
		t.Errorf("default scenarios %+v", a)
	}
}
