package cli

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"

	"streamscale/env"
	"streamscale/internal/command"
	"streamscale/internal/regfile"
	"streamscale/traces"
)

// Options is what a run of the command needs from its process: the
// command's IO, the build recorded in artifacts and the episode
// parallelism. Main fills it from the process; tests set it.
type Options struct {
	command.IO
	// Commit and GoVersion are recorded in artifacts; "" means "unknown".
	Commit, GoVersion string
	// Workers bounds the episodes run at once; ≤ 0 means GOMAXPROCS.
	Workers int
}

func usagef(format string, args ...any) error { return command.Usagef(format, args...) }

// usageError marks err as bad usage (exit status 2).
func usageError(err error) error { return command.Usagef("%v", err) }

const usage = `usage: go run ./eval <command> [flags]

commands:
  run      run one episode of one controller and summarise it
  paired   run the paired evaluation protocol and judge it
  sweep    run uniform static allocations over a CPU grid: violations and p95 against CPU
  clasp    reproduce the CLASP evaluation in simulation
  live     run controllers against the real planner/worker runtime on a trace slice
  simgap   eval live, and the same controllers in the simulator on the same slice, side by side
  liveclasp  re-measure CLASP's claims live (worker-count error, placement throughput, migrations) on CLASP apps
  calibrate  probe the live runtime: per-operator CPU per event, per-hop delay, actuation delay
  obsswap  which observation features make a policy act differently live than simulated (eval simgap -obs)
  tune     tune a rule (threshold, threshold:measured, flink) by a grid on development placements
  report   render the results tables of README.md and docs/ from their committed summaries (-check: fail on drift)

Run 'go run ./eval <command> -h' for the flags of a command.
`

// Main runs the eval command with args (without the program name) and
// returns the exit status: 0 on success or -h, 2 for bad usage (one line
// naming the flag), 1 for a failure.
func Main(ctx context.Context, args []string, io command.IO) int {
	b := command.BuildInfo()
	return run(ctx, args, Options{IO: io, Commit: b.Commit, GoVersion: b.GoVersion})
}

func run(ctx context.Context, args []string, o Options) int {
	o.IO = o.IO.Fill()
	if o.Commit == "" {
		o.Commit = "unknown"
	}
	if o.GoVersion == "" {
		o.GoVersion = "unknown"
	}
	wrap := func(f func(context.Context, []string, Options) error) func(context.Context, []string, command.IO) error {
		return func(ctx context.Context, args []string, _ command.IO) error { return f(ctx, args, o) }
	}
	return command.Dispatch(ctx, "eval", usage, map[string]func(context.Context, []string, command.IO) error{
		"run": wrap(runCmd), "paired": wrap(pairedCmd), "clasp": wrap(claspCmd), "sweep": wrap(sweepCmd),
		"live": wrap(liveCmd), "simgap": wrap(simgapCmd), "calibrate": wrap(calibrateCmd), "live-worker": wrap(liveWorkerCmd), "liveclasp": wrap(liveclaspCmd),
		"obsswap": wrap(obsswapCmd), "report": wrap(reportCmd), "tune": wrap(tuneCmd),
	}, args, o.IO)
}

// parseFlags parses args into fs (-h prints the flags), turning flag
// errors into usage errors and refusing positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, o Options) error {
	return command.Parse(fs, "usage: go run ./"+fs.Name()+" [flags]", args, o.IO)
}

// explicit reports which flags were set on the command line.
func explicit(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

func checkProfile(p string) error {
	if !slices.Contains(env.Profiles(), p) {
		return usagef("eval: unknown profile %q (want %s)", p, strings.Join(env.Profiles(), " or "))
	}
	return nil
}

func checkTrace(t string) error {
	if slices.Contains(traces.Names(), t) {
		return nil
	}
	if strings.HasSuffix(t, ".csv") || strings.HasSuffix(t, ".parquet") {
		return nil
	}
	return usagef("eval: unknown trace %q (want %s, or a path ending in .csv or .parquet)", t, strings.Join(traces.Names(), ", "))
}

// scenarioUsage is the help text of every -scenario flag.
var scenarioUsage = "simulator scenario: a physics preset (" + strings.Join(env.Scenarios(), " or ") + ") or a scenario file (eval calibrate -out writes one)"

// workloadFlags are the flags `eval run` and `eval sweep` share: one
// profile on one workload under one physics preset.
type workloadFlags struct {
	profile, trace, dir, scenario *string
	mult                          *float64
}

func addWorkloadFlags(fs *flag.FlagSet) workloadFlags {
	return workloadFlags{
		profile:  fs.String("profile", "pred", "application profile: pred or etl"),
		trace:    fs.String("trace", "taxi", "workload: taxi, taxi-train, intel, or a .csv/.parquet trace file"),
		dir:      fs.String("traces", traces.DefaultDir(), "trace data directory (env STREAMSCALE_TRACES)"),
		mult:     fs.Float64("rate-mult", 1, "arrival-rate multiplier, > 0"),
		scenario: fs.String("scenario", env.Scenarios()[0], scenarioUsage),
	}
}

// check validates the flags (usage errors naming the flag) and returns
// the scenario.
func (w workloadFlags) check() (env.Scenario, error) {
	if err := checkProfile(*w.profile); err != nil {
		return env.Scenario{}, err
	}
	if err := checkTrace(*w.trace); err != nil {
		return env.Scenario{}, err
	}
	if err := checkRateMult(*w.mult); err != nil {
		return env.Scenario{}, err
	}
	return resolveScenario("scenario", *w.scenario)
}

// resolveScenario returns the scenario of a -scenario flag (named flag):
// a preset or a scenario file, read as a regular file of at most
// env.MaxScenarioFile bytes (1 MiB: a FIFO, a device such as /dev/zero, a
// directory or a larger file is refused); anything else is a usage error
// naming the flag.
func resolveScenario(flag, arg string) (env.Scenario, error) {
	s, err := env.ResolveScenario(arg, regfile.Reader(env.MaxScenarioFile))
	if err != nil {
		return env.Scenario{}, usagef("eval: -%s: %v", flag, err)
	}
	return s, nil
}

// checkScenario builds the environment of cfg once and discards it, so
// that physics the episode cannot run (e.g. an actuation delay as long as
// a very short episode) fail as bad usage before any episode runs.
func checkScenario(cfg env.Config) error {
	if _, err := env.New(cfg); err != nil {
		return usagef("eval: %v", err)
	}
	return nil
}

func checkRateMult(k float64) error {
	if !(k > 0) || math.IsInf(k, 0) {
		return usagef("eval: rate multiplier %v, want a finite number > 0", k)
	}
	return nil
}

// loadTrace loads a named trace or a file; failures are usage errors (a
// missing or malformed file). The fallback notice goes to stderr.
func loadTrace(name, dir string, mult float64, seed uint64, o Options) (*traces.Trace, error) {
	t, err := traces.Load(name, traces.Options{Dir: dir, RateMult: mult, Seed: seed, Logf: func(format string, args ...any) {
		fmt.Fprintf(o.Stderr, "eval: "+format+"\n", args...)
	}})
	if err != nil {
		return nil, usagef("eval: trace %q: %v", name, err)
	}
	return t, nil
}

// splitList splits a comma-separated flag value, refusing empty entries
// and duplicates.
func splitList(flagName, v string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, usagef("eval: -%s %q has an empty entry", flagName, v)
		}
		if slices.Contains(out, s) {
			return nil, usagef("eval: -%s lists %q twice", flagName, s)
		}
		out = append(out, s)
	}
	return out, nil
}
