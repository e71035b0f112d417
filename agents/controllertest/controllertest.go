// Package controllertest is the acceptance test that every
// agents.Controller passes, in the manner of a test harness standing in for
// the cluster: it drives the controller through small PRED and ETL
// scenarios and checks the Controller contract.
//
// For each scenario (placement seed 7, an in-memory workload of Steps
// steps that rises and falls between about 400 and 4,800 messages/s, with a
// burst and an idle spell), Run checks that
//
//   - every action is valid for the environment (env.Env.ValidateAction)
//     and Act never fails or panics on a well-formed observation;
//   - Act on a malformed (empty) observation returns an error, does not
//     panic, and does not change the controller's state;
//   - the controller does not retain the observation: it is given a fresh
//     copy each step, which is filled with NaN as soon as Act returns; the
//     returned action must be unaffected, and every action must equal that
//     of a control instance given clean copies;
//   - it is deterministic: Reset with the same seed on the same instance
//     replays the identical action sequence (bit for bit), this time with
//     the environment's own, reused observation buffers.
//
// Units, as in package agents: millicores. The package has no randomness
// of its own and runs no goroutines.
package controllertest

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"streamscale/agents"
	"streamscale/env"
)

// Steps is the length of an acceptance episode, in steps.
const Steps = 400

// Seed is the seed passed to Reset; PlacementSeed places the tasks.
const (
	Seed          = 42
	PlacementSeed = 7
)

// ErrUnsupported, returned (possibly wrapped) by a RunScenario factory,
// skips that scenario, e.g. for a policy trained on one profile only.
var ErrUnsupported = errors.New("controllertest: scenario not supported")

// Workload returns the acceptance workload: a wave of period 160 steps
// between about 400 and 4,800 messages/s, a burst to 6,000 at steps
// 250–269 and no arrivals at steps 340–349.
func Workload() env.Workload {
	r := make(Rates, Steps)
	for t := range r {
		r[t] = 2600 + 2200*math.Sin(2*math.Pi*float64(t)/160)
		switch {
		case t >= 250 && t < 270:
			r[t] = 6000
		case t >= 340 && t < 350:
			r[t] = 0
		}
	}
	return r
}

// Config returns the acceptance scenario of a profile ("pred" or "etl").
func Config(profile string) (env.Config, error) {
	cfg, err := env.EdgeConfig(profile, PlacementSeed, Workload())
	if err != nil {
		return env.Config{}, err
	}
	cfg.Steps = Steps
	return cfg, nil
}

// Run runs the acceptance test on the controllers newCtl builds, one
// subtest per scenario. newCtl is called for fresh instances (a subject
// and a control per scenario).
func Run(t *testing.T, name string, newCtl func() agents.Controller) {
	t.Helper()
	RunScenario(t, name, func(env.Config) (agents.Controller, error) { return newCtl(), nil })
}

// RunScenario is Run for controllers built for a scenario (VRebalance
// needs its placement and capacities): newCtl receives the scenario the
// instance will control. A factory error wrapping ErrUnsupported skips the
// scenario; any other error fails the test.
func RunScenario(t *testing.T, name string, newCtl func(scenario env.Config) (agents.Controller, error)) {
	t.Helper()
	for _, profile := range []string{"pred", "etl"} {
		t.Run(name+"/"+profile, func(t *testing.T) {
			cfg, err := Config(profile)
			if err != nil {
				t.Fatal(err)
			}
			if err := check(cfg, newCtl, Steps); errors.Is(err, ErrUnsupported) {
				t.Skip(err)
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// check runs the acceptance checks on one scenario for steps steps and
// returns the first failure.
func check(cfg env.Config, newCtl func(env.Config) (agents.Controller, error), steps int) error {
	e, err := env.New(cfg)
	if err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	sub, err := newCtl(cfg)
	if err != nil {
		return fmt.Errorf("building the controller: %w", err)
	}
	ctl, err := newCtl(cfg)
	if err != nil {
		return fmt.Errorf("building the control instance: %w", err)
	}
	if err := reset(sub, Seed); err != nil {
		return err
	}
	if err := reset(ctl, Seed); err != nil {
		return err
	}

	// Lockstep: the subject gets fresh copies that are poisoned after
	// Act; the control instance gets clean copies.
	var seq []env.Action
	obs, _, err := e.Reset(Seed)
	if err != nil {
		return err
	}
	for k := 0; k < steps; k++ {
		if k == 0 || k == steps/2 {
			if err := probeBadInput(sub, k); err != nil {
				return err
			}
		}
		so := obs.Clone()
		a, err := act(sub, so)
		if err != nil {
			return fmt.Errorf("step %d: %w", k, err)
		}
		if err := e.ValidateAction(a); err != nil {
			return fmt.Errorf("step %d: invalid action: %w", k, err)
		}
		saved := cloneAction(a)
		poison(so)
		if !equalAction(a, saved) {
			return fmt.Errorf("step %d: the action changed when the observation was overwritten: it aliases the observation", k)
		}
		b, err := act(ctl, obs.Clone())
		if err != nil {
			return fmt.Errorf("step %d: control instance: %w", k, err)
		}
		if !equalAction(saved, b) {
			return fmt.Errorf("step %d: action %s differs from the control instance's %s: the controller retains the observation, or is not deterministic", k, fmtAction(saved), fmtAction(b))
		}
		seq = append(seq, saved)
		var tr bool
		var sr env.StepResult
		sr, err = e.Step(saved)
		obs = sr.Obs
		tr = sr.Truncated
		if err != nil {
			return fmt.Errorf("step %d: env: %w", k, err)
		}
		if tr {
			break
		}
	}

	// Replay: Reset the same instance with the same seed and feed the
	// environment's own buffers.
	if err := reset(sub, Seed); err != nil {
		return err
	}
	obs, _, err = e.Reset(Seed)
	if err != nil {
		return err
	}
	for k, want := range seq {
		a, err := act(sub, obs)
		if err != nil {
			return fmt.Errorf("replay step %d: %w", k, err)
		}
		if !equalAction(a, want) {
			return fmt.Errorf("replay step %d: after Reset(%d) the action is %s, first run %s: not deterministic", k, uint64(Seed), fmtAction(a), fmtAction(want))
		}
		var sr env.StepResult
		if sr, err = e.Step(a); err != nil {
			return fmt.Errorf("replay step %d: env: %w", k, err)
		}
		obs = sr.Obs
	}
	return nil
}

// errPanic marks a recovered panic.
var errPanic = errors.New("panicked")

func reset(c agents.Controller, seed uint64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reset %w: %v", errPanic, r)
		}
	}()
	if err := c.Reset(seed); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	return nil
}

func act(c agents.Controller, obs env.Observation) (a env.Action, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("act %w: %v", errPanic, r)
		}
	}()
	return c.Act(obs)
}

// probeBadInput checks that Act rejects an empty observation.
func probeBadInput(c agents.Controller, k int) error {
	if _, err := act(c, env.Observation{}); err == nil {
		return fmt.Errorf("step %d: Act accepted an empty observation", k)
	} else if errors.Is(err, errPanic) {
		return fmt.Errorf("step %d: on an empty observation: %w", k, err)
	}
	return nil
}

func poison(o env.Observation) {
	for _, s := range [][]float64{o.App, o.Server, o.Task} {
		for i := range s {
			s[i] = math.NaN()
		}
	}
}

func cloneAction(a env.Action) env.Action {
	var c env.Action
	if a.Choices != nil {
		c.Choices = append([]int{}, a.Choices...)
	}
	if a.Targets != nil {
		c.Targets = append([]float64{}, a.Targets...)
	}
	return c
}

// equalAction compares bit for bit.
func equalAction(a, b env.Action) bool {
	if (a.Choices == nil) != (b.Choices == nil) || (a.Targets == nil) != (b.Targets == nil) ||
		len(a.Choices) != len(b.Choices) || len(a.Targets) != len(b.Targets) {
		return false
	}
	for i := range a.Choices {
		if a.Choices[i] != b.Choices[i] {
			return false
		}
	}
	for i := range a.Targets {
		if math.Float64bits(a.Targets[i]) != math.Float64bits(b.Targets[i]) {
			return false
		}
	}
	return true
}

func fmtAction(a env.Action) string {
	if a.Choices != nil {
		return fmt.Sprintf("choices %v", a.Choices)
	}
	return fmt.Sprintf("targets %v", a.Targets)
}

// Rates is an in-memory workload: events/s per step.
type Rates []float64

// Len implements env.Workload.
func (r Rates) Len() int { return len(r) }

// Rate implements env.Workload.
func (r Rates) Rate(i int) float64 { return r[i] }

// Diurnal is n steps of a daily cycle of 288 steps (one 5-minute trace
// window per step, as the traces are replayed) between 400 and 4,400
// messages/s.
func Diurnal(n int) Rates {
	r := make(Rates, n)
	for i := range r {
		r[i] = 2400 + 2000*math.Sin(2*math.Pi*float64(i)/288)
	}
	return r
}

// TaskRow is one hand-built task row of an observation: allocation
// (millicores), offered load and processed/input ratio.
type TaskRow struct{ CPU, Rho, Ratio float64 }

// Obs builds an observation with the given task rows (MaxCPU 10,000), the
// application's p95 (ms, for an SLO of sloMS) and sink throughput (msg/s).
func Obs(tasks []TaskRow, p95MS, sloMS, thrp float64) env.Observation {
	o := env.Observation{
		App:    make([]float64, env.AppFeatures),
		Server: make([]float64, env.ServerFeatures),
		Task:   make([]float64, len(tasks)*env.TaskFeatures),
	}
	total := 0.0
	for k, tk := range tasks {
		row := o.Task[k*env.TaskFeatures : (k+1)*env.TaskFeatures]
		row[env.TaskCPU] = tk.CPU / 10000
		row[env.TaskDemandPerCPU] = math.Log1p(tk.Rho)
		row[env.TaskThroughputRatio] = tk.Ratio
		total += tk.CPU
	}
	o.App[env.AppP95Latency] = p95MS / sloMS
	o.App[env.AppMeanCPU] = total / float64(len(tasks)) / 10000
	o.App[env.AppThroughput] = math.Log1p(thrp)
	return o
}

// Episode runs ctl for a whole episode of cfg and returns the share of
// steps that violated the SLO and the mean total allocation.
func Episode(t testing.TB, cfg env.Config, ctl agents.Controller, seed uint64) (violations, meanCPU float64) {
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
		var sr env.StepResult
		sr, err = e.Step(a)
		obs = sr.Obs
		tr = sr.Truncated
		info = sr.Info
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
