package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"streamscale/eval/live"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// Calibration is calibration.json of `eval calibrate`.
type Calibration struct {
	Profile    string              `json:"profile"`
	Rate       float64             `json:"rate"`
	TimeScaleS float64             `json:"time_scale_s"`
	Intervals  int                 `json:"intervals"`
	CPUScale   float64             `json:"cpu_scale"`
	HighMC     float64             `json:"high_millicores"`
	LowMC      float64             `json:"low_millicores"`
	Seed       uint64              `json:"seed"`
	Operators  []live.OperatorCost `json:"operators"`
	// ActuationIntervals is how many control intervals after the
	// decision the workers first reported the new quota (0: within the
	// interval it was meant for; -1: never); ActuationMaxMS bounds the
	// delay by that count (interval length × (count + 1)).
	ActuationIntervals int     `json:"actuation_intervals"`
	ActuationMaxMS     float64 `json:"actuation_max_ms"`
	// P95 before and after the step down, ms (means over the halves).
	P95HighMS float64 `json:"p95_high_ms"`
	P95LowMS  float64 `json:"p95_low_ms"`
	Commit    string  `json:"commit"`
	GoVersion string  `json:"go_version"`
}

func calibrateCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval calibrate")
	profile := fs.String("profile", "pred", "application profile: pred or etl")
	rate := fs.Float64("rate", 2000, "constant input rate, inputs/s")
	scale := fs.Duration("time-scale", 250*time.Millisecond, "control interval (and the workers' report interval)")
	dur := fs.Duration("duration", 10*time.Second, "probe length; the allocation steps down from -high to -low half way")
	cpuScale := fs.Float64("cpu-scale", 0.01, "live CFS millicores per scenario millicore")
	high := fs.Float64("high", 10000, "scenario millicores per task in the first half")
	low := fs.Float64("low", 500, "scenario millicores per task in the second half")
	seed := fs.Uint64("seed", 1, "seed of the input source")
	out := fs.String("out", "out/calibrate", "output directory (created if missing)")
	asJSON := fs.Bool("json", false, "print calibration.json to stdout")
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	if err := checkProfile(*profile); err != nil {
		return err
	}
	switch {
	case !(*rate > 0) || *rate > 1e6:
		return usagef("eval: -rate %v, want 0 < rate ≤ 1e6 inputs/s", *rate)
	case *scale < 10*time.Millisecond || *scale > time.Minute:
		return usagef("eval: -time-scale %v, want 10ms..1m", *scale)
	case *dur < 8**scale || *dur > time.Hour:
		return usagef("eval: -duration %v, want at least 8 intervals (%v) and at most 1h", *dur, 8**scale)
	case !(*cpuScale > 0) || *cpuScale > 1000:
		return usagef("eval: -cpu-scale %v, want > 0 and ≤ 1000", *cpuScale)
	case !(*high >= 500 && *high <= 10000) || !(*low >= 500 && *low <= 10000):
		return usagef("eval: -high %v and -low %v, want scenario millicores in [500, 10000]", *high, *low)
	}
	n := int(*dur / *scale)
	at := n / 2
	tr := &traces.Trace{Name: "constant", Source: "synthetic", Counts: []float64{*rate}, Scale: 1}
	sc, err := runner.Config(runner.Spec{Profile: *profile, Workload: tr, PlacementSeed: 101, Steps: n})
	if err != nil {
		return usageError(err)
	}
	app, err := ops.AppByName(*profile)
	if err != nil {
		return usageError(err)
	}
	probe, err := live.NewStepController(len(sc.App.Tasks), *high, *low, at)
	if err != nil {
		return usageError(err)
	}
	var names []string
	for _, s := range app.Operators {
		names = append(names, s.Name)
	}
	cal := live.NewCalibration(names)
	cfg := live.Config{Scenario: sc, App: app, Trace: tr, Step: *scale, Intervals: n, Seed: *seed, CPUScale: *cpuScale,
		Controller: probe, Name: fmt.Sprintf("step:%g→%g@%d", *high, *low, at), WorkerArgs: []string{"live-worker"}, Tap: cal.Tap(2, at)}
	res, _, err := live.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	lowMC := max(1, int(*low**cpuScale+0.5))
	c := Calibration{Profile: *profile, Rate: *rate, TimeScaleS: scale.Seconds(), Intervals: n, CPUScale: *cpuScale, HighMC: *high, LowMC: *low,
		Seed: *seed, Operators: cal.Costs(), ActuationIntervals: cal.ActuationIntervals(at, lowMC), Commit: o.Commit, GoVersion: o.GoVersion}
	if c.ActuationIntervals >= 0 {
		c.ActuationMaxMS = float64(c.ActuationIntervals+1) * scale.Seconds() * 1000
	}
	for i, iv := range res.Intervals {
		if i < at {
			c.P95HighMS += iv.P95MS / float64(at)
		} else {
			c.P95LowMS += iv.P95MS / float64(len(res.Intervals)-at)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	b, err := report.MarshalJSON(c)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "calibration.json"), b, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	md := calibrationMarkdown(c)
	if err := os.WriteFile(filepath.Join(*out, "calibration.md"), md, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if *asJSON {
		_, err = o.Stdout.Write(b)
	} else {
		_, err = o.Stdout.Write(md)
	}
	return err
}

func calibrationMarkdown(c Calibration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Live calibration: %s at %g inputs/s\n\n", c.Profile, c.Rate)
	fmt.Fprintf(&b, "%d intervals of %.3g s; every task at %g scenario mc (cpu scale %g) until interval %d, then %g mc. Costs and delays from intervals 2..%d (the high phase).\n\n",
		c.Intervals, c.TimeScaleS, c.HighMC, c.CPUScale, c.Intervals/2, c.LowMC, c.Intervals/2-1)
	b.WriteString("| operator | CPU µs per event | CV (between intervals) | delay ms (enqueue → done) | intervals |\n|---|---:|---:|---:|---:|\n")
	for _, oc := range c.Operators {
		fmt.Fprintf(&b, "| %s | %.3f | %.2f | %.2f | %d |\n", oc.Operator, oc.CPUUSPerEvent, oc.CV, oc.DelayMS, oc.Intervals)
	}
	fmt.Fprintf(&b, "\nActuation: the workers reported the new quota %d interval(s) after the decision (≤ %.0f ms). Mean p95: %.1f ms at %g mc, %.1f ms at %g mc.\n",
		c.ActuationIntervals, c.ActuationMaxMS, c.P95HighMS, c.HighMC, c.P95LowMS, c.LowMC)
	return []byte(b.String())
}

// hostLoad is the host's clock and load averages (/proc/loadavg: 1, 5
// and 15 minutes), recorded beside live measurements on the shared
// machine; "" where the file is missing.
func hostLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return time.Now().UTC().Format(time.RFC3339) + " load average " + strings.Join(f[:3], ", ")
}
