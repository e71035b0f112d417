package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/runner"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
	"streamscale/traces"
)

// TestMain doubles as the worker process: Run execs this test binary
// with the "live-worker" argument.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "live-worker" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := RunWorker(ctx, os.Args[2:], os.Getenv, os.Stderr)
		stop()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func liveConfig(t testing.TB, profile string, mc float64, rate float64, intervals int, scale float64) Config {
	t.Helper()
	tr := &traces.Trace{Name: "const", Counts: []float64{rate}, Scale: 1}
	sc, err := env.EdgeConfig(profile, 101, tr)
	if err != nil {
		t.Fatal(err)
	}
	app, err := ops.AppByName(profile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := agents.NewStatic(mc)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Scenario: sc, App: app, Trace: tr, Step: 250 * time.Millisecond, Intervals: intervals, Seed: 1,
		CPUScale: scale, Controller: st, Name: "static", WorkerArgs: []string{"live-worker"}}
	if testing.Verbose() {
		c.Log = os.Stderr
	}
	return c
}

// TestAllocationsBind runs pred on the real runtime twice (16 intervals
// of 250 ms at 3,000 inputs/s, CPU scale 0.01): the simulator's minimum
// allocation (static:500) cannot keep up and violates the SLO in most
// intervals; a generous one (static:4000) keeps up. The margins are wide
// (SenMLParse costs ≈ 2.1 µs per input, so static:500's 5 live mc serve
// ≈ 2,000–2,400 inputs/s of the 3,000 offered on this machine; static:4000
// ≈ 19,000).
func TestAllocationsBind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	if raceEnabled {
		t.Skip("the race detector slows the runtime about tenfold: static:4000 no longer keeps up")
	}
	run := func(mc float64) (float64, float64, Info) {
		c := liveConfig(t, "pred", mc, 3000, 16, 0.01)
		res, info, err := Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Intervals) != 16 {
			t.Fatalf("static:%v: %d intervals, want 16", mc, len(res.Intervals))
		}
		for _, iv := range res.Intervals {
			if iv.TotalCPU != mc*6 {
				t.Fatalf("static:%v: interval %d total CPU %v, want %v", mc, iv.Step, iv.TotalCPU, mc*6)
			}
		}
		t.Logf("static:%v: violation rate %.3f, mean p95 %.1f ms, throughput %.0f/s, unfinished %d, dropped %d, failures %d", mc, res.Summary.ViolationRate, res.Summary.MeanP95MS, res.Summary.MeanThroughput, info.Unfinished, info.Dropped, info.ControlFailures)
		return res.Summary.ViolationRate, res.Summary.MeanP95MS, info
	}
	lowV, lowP, lowInfo := run(500)
	load := loadAverage(t)
	highV, highP, highInfo := run(4000)
	load = max(load, loadAverage(t))
	// The starved run's backlog is unfinished, not lost: nothing is
	// dropped (issue #34, item 12).
	if lowInfo.Unfinished == 0 || lowInfo.Dropped+highInfo.Dropped != 0 || lowInfo.Lost != 0 || lowInfo.ControlFailures+highInfo.ControlFailures != 0 {
		t.Fatalf("static:500 left %d inputs unfinished, want some; dropped %d and %d, lost %d; control failures %d and %d", lowInfo.Unfinished, lowInfo.Dropped, highInfo.Dropped, lowInfo.Lost, lowInfo.ControlFailures, highInfo.ControlFailures)
	}
	// The latencies are the host's as much as the allocation's: with more
	// runnable threads than CPUs (the load average of a shared or CI host
	// running other tests), static:4000's processes wait for a CPU for
	// hundreds of ms (seen: violation rate 0.94 and 3,611 inputs unfinished at a
	// load average of 16 on 2 CPUs), so the claims are only logged there.
	bad := lowV < 0.6 || lowV < highV+0.3 || lowP < 2*highP || highInfo.Unfinished != 0
	msg := fmt.Sprintf("static:500 violation rate %.3f (p95 %.1f ms, unfinished %d), static:4000 %.3f (p95 %.1f ms, unfinished %d): the minimum allocation should violate and the generous one not",
		lowV, lowP, lowInfo.Unfinished, highV, highP, highInfo.Unfinished)
	switch {
	case bad && load > float64(goruntime.NumCPU()):
		t.Logf("%s; not asserted on a host with load average %.2f on %d CPUs", msg, load, goruntime.NumCPU())
	case bad:
		t.Fatal(msg)
	}
}

// loadAverage returns the host's 1-minute load average (0 if unknown).
func loadAverage(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Logf("no load average: %v", err)
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	x, _ := strconv.ParseFloat(f[0], 64)
	return x
}

// TestWarmup: the warm-up intervals run before the recorded ones and are
// neither recorded, tapped nor controlled; the recorded run starts at the
// controller's allocation with the trace's first point.
func TestWarmup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	c := liveConfig(t, "pred", 500, 1000, 4, 0.01)
	c.Trace = &traces.Trace{Name: "two", Counts: []float64{1000, 1600, 2200, 2800}, Scale: 1}
	c.Warmup = 3
	var tapped []int
	c.Tap = func(step int, _ []planner.TaskObs) { tapped = append(tapped, step) }
	res, info, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Intervals) != 4 || len(tapped) != 4 || tapped[0] != 0 || info.ControlFailures != 0 {
		t.Fatalf("%d intervals, tapped %v, %d control failures; want 4, [0 1 2 3], 0", len(res.Intervals), tapped, info.ControlFailures)
	}
	for _, iv := range res.Intervals {
		if iv.TotalCPU != 500*6 {
			t.Fatalf("interval %d total CPU %v, want 3000 (the warm-up's maximum is not recorded)", iv.Step, iv.TotalCPU)
		}
	}
	// The planner sent the warm-up's three repeats of the first point
	// (750 inputs) before the trace's 1,900.
	if info.Inputs < 2500 || info.Inputs > 2800 {
		t.Fatalf("%d inputs sent, want ≈ 2,650 (750 in the warm-up, 1,900 recorded)", info.Inputs)
	}
	// The recorded slice is the trace, not the warm-up's repeats of its
	// first point: its intervals offered the trace's 1,900 inputs, not
	// 4 × 250. (Their sum, not each interval's: on a busy host a round
	// of the control loop runs late and its window takes inputs of the
	// next; only a late last warm-up round moves inputs out of the
	// recorded slice, 1,000 per second of lateness.)
	offered := 0.0
	for _, iv := range res.Intervals {
		offered += iv.Offered * c.Step.Seconds()
	}
	if offered < 1450 {
		t.Fatalf("the recorded intervals offered %.0f inputs (per interval %v/s), want ≈ 1,900 (the trace, not the warm-up's 4 × 250)", offered, offeredPerInterval(res))
	}
}

func offeredPerInterval(res runner.Result) []float64 {
	var out []float64
	for _, iv := range res.Intervals {
		out = append(out, iv.Offered)
	}
	return out
}

// failing is a controller that errs at every decision.
type failing struct{}

func (failing) Reset(uint64) error { return nil }
func (failing) Act(env.Observation) (env.Action, error) {
	return env.Action{}, errors.New("boom")
}

// TestConfigErrors: a bad configuration is refused before anything starts.
func TestConfigErrors(t *testing.T) {
	base := liveConfig(t, "pred", 500, 100, 4, 0.01)
	for name, mod := range map[string]func(*Config){
		"no trace":      func(c *Config) { c.Trace = nil },
		"no controller": func(c *Config) { c.Controller = nil },
		"step":          func(c *Config) { c.Step = time.Millisecond },
		"intervals":     func(c *Config) { c.Intervals = 0 },
		"workers":       func(c *Config) { c.Workers = 99 },
		"cpu scale":     func(c *Config) { c.CPUScale = -1 },
		"warm-up":       func(c *Config) { c.Warmup = -1 },
		"wrong app":     func(c *Config) { c.App, _ = ops.AppByName("wc") },
	} {
		c := base
		mod(&c)
		if _, _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// slow blocks in Act until released.
type slow struct{ release chan struct{} }

func (slow) Reset(uint64) error { return nil }
func (s slow) Act(env.Observation) (env.Action, error) {
	<-s.release
	return env.Action{Hold: true}, nil
}

// TestAsker: a failing controller's error and a slow controller's timeout
// come back as errors (the run keeps the allocation), and a controller
// whose decision is still running is not asked again until it returns.
func TestAsker(t *testing.T) {
	o, sc := observer(t, "pred")
	obs := o.Observe(Measured{}, allocOf(sc, 500))
	ctx := context.Background()
	if _, err := (&asker{c: failing{}}).act(ctx, obs, time.Second); err == nil || err.Error() != "boom" {
		t.Fatalf("failing controller: %v", err)
	}
	s := slow{release: make(chan struct{})}
	k := &asker{c: s}
	if _, err := k.act(ctx, obs, 20*time.Millisecond); err == nil {
		t.Fatal("slow controller: no timeout")
	}
	if _, err := k.act(ctx, obs, 20*time.Millisecond); err == nil {
		t.Fatal("asked again while the previous decision runs")
	}
	close(s.release)
	var a env.Action
	var err error
	for range 500 { // until the released decision has returned
		if a, err = k.act(ctx, obs, time.Second); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || !a.Hold {
		t.Fatalf("after the decision returned: %+v, %v", a, err)
	}
}

// TestRunRace runs a short, light live run under the race detector (where
// TestAllocationsBind is skipped), for the hook's and the asker's
// synchronisation.
func TestRunRace(t *testing.T) {
	if !raceEnabled || testing.Short() {
		t.Skip("only under -race")
	}
	c := liveConfig(t, "pred", 4000, 100, 8, 0.01)
	res, info, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Intervals) != 8 || res.Intervals[0].TotalCPU != 24000 || info.ControlFailures != 0 || info.Inputs == 0 {
		t.Fatalf("%d intervals, first total CPU %v, %d control failures, %d inputs", len(res.Intervals), res.Intervals[0].TotalCPU, info.ControlFailures, info.Inputs)
	}
}
