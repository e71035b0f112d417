package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"streamscale/clasp"
	"streamscale/env"
	"streamscale/eval/claspexp"
	"streamscale/internal/command"
)

// claspCmd runs the CLASP reproduction (package claspexp) and writes
// clasp.json, clasp.md and the figures (claspexp.Figures) into -out.
func claspCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval clasp")
	out := fs.String("out", "", "output directory for clasp.json and clasp.md (required)")
	asJSON := fs.Bool("json", false, "print clasp.json to stdout")
	apps := fs.String("apps", "", "comma-separated apps for every experiment (default: all seven for scaling, coefficients and placement; syn,wc,aa for worker counts and load modes; wc,aa for migration)")
	iters := fs.Int("iters", claspexp.DefaultProbe().Iters, "bisection steps of the sustained-rate search, 1…30")
	seed := fs.Uint64("seed", 1, "root seed (recorded; the scenarios draw no randomness)")
	seeds := fs.Int("seeds", len(claspexp.DefaultOptions().ModeSeeds), "seeds of the load modes' traces (1, 2, …), 1…20; the other experiments have no randomness")
	maxInFlight := fs.Int("max-in-flight", 0, "the workers' cap on requests in flight (env.WorkerPhysics.MaxInFlight): 0 (default, the paper's harness) is none, else at least the 10 executor slots")
	fractions := fs.String("fractions", formatGrid(claspexp.DefaultTransitionOptions().Fractions), "worker counts: the transitions' rates as fractions of the 10-worker maximum, comma-separated, strictly ascending, each in (0, 1], at least 2 (every ordered pair is a transition)")
	probeSteps := fs.Int("probe-steps", claspexp.DefaultProbe().Steps, "length of one sustained-rate trial, simulated seconds, 4…600")
	timePlanner := fs.Bool("time-planner", false, "measure the planner's decision time of each move with the wall clock (experiment 7's planner_ms; off: 0, and the same flags give identical bytes)")
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	if *out == "" {
		return usagef("eval clasp: -out is required")
	}
	if *iters < 1 || *iters > 30 {
		return usagef("eval clasp: -iters %d outside 1…30", *iters)
	}
	if *seeds < 1 || *seeds > 20 {
		return usagef("eval clasp: -seeds %d outside 1…20", *seeds)
	}
	if *probeSteps < 4 || *probeSteps > 600 {
		return usagef("eval clasp: -probe-steps %d outside 4…600", *probeSteps)
	}
	fr, err := parseFractions(*fractions)
	if err != nil {
		return err
	}
	if slots := env.PaperWorkers().Slots; *maxInFlight < 0 || (*maxInFlight > 0 && *maxInFlight < slots) {
		return usagef("eval clasp: -max-in-flight %d: want 0 (no cap) or ≥ the %d executor slots", *maxInFlight, slots)
	}
	opt := claspexp.DefaultOptions()
	opt.Probe.Iters = *iters
	opt.Probe.Steps = *probeSteps
	opt.Transition.Fractions = fr
	opt.MaxInFlight = *maxInFlight
	opt.ModeSeeds = nil
	for i := range *seeds {
		opt.ModeSeeds = append(opt.ModeSeeds, uint64(i+1))
	}
	if *timePlanner {
		opt.Clock = time.Now // the planner's decision time of each move (experiment 7)
	}
	if *apps != "" {
		if err := setClaspApps(&opt, *apps); err != nil {
			return err
		}
	}
	rep, err := claspexp.Reproduce(ctx, opt, claspProgress(o))
	if err != nil {
		return err
	}
	rep.Seed, rep.Commit, rep.GoVersion = *seed, o.Commit, o.GoVersion
	return writeClasp(o, *out, *asJSON, &rep)
}

// setClaspApps runs every experiment on the apps of an -apps list (the
// migration on the first).
func setClaspApps(opt *claspexp.Options, list string) error {
	names, err := splitList("apps", list)
	if err != nil {
		return err
	}
	opt.Apps = nil
	for _, n := range names {
		a, err := clasp.AppByName(n)
		if err != nil {
			return usagef("eval clasp: -apps: %v", err)
		}
		opt.Apps = append(opt.Apps, a)
	}
	opt.WorkerApps, opt.ModeApps, opt.RoutingApps = opt.Apps, opt.Apps, opt.Apps
	opt.MigrateApps = opt.Apps[:1]
	return nil
}

// claspProgress prints each stage as it starts: k/total, the time elapsed
// and an estimate of the time left from the stages done (stderr only).
func claspProgress(o Options) func(string) {
	started, done := time.Now(), 0
	return func(stage string) {
		left := ""
		if el := time.Since(started); done > 0 {
			left = fmt.Sprintf(", %s elapsed, about %s left", el.Round(time.Second),
				time.Duration(float64(el)/float64(done)*float64(len(claspexp.Stages)-done)).Round(time.Second))
		}
		done++
		fmt.Fprintf(o.Stderr, "eval clasp: stage %d/%d %s%s\n", done, len(claspexp.Stages), stage, left)
	}
}

// writeClasp writes clasp.json, clasp.md and the figures into out and
// prints the headline figures (or the JSON).
func writeClasp(o Options, out string, asJSON bool, rep *claspexp.Report) error {
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	js = append(js, '\n')
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "clasp.json"), js, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "clasp.md"), []byte(rep.Markdown()), 0o644); err != nil {
		return err
	}
	figs, err := claspexp.Figures(out, rep)
	if err != nil {
		return fmt.Errorf("eval clasp: figures: %w", err)
	}
	if asJSON {
		_, err = o.Stdout.Write(js)
		return err
	}
	fmt.Fprintf(o.Stdout, "SYN speedup %.2f× (5 workers), %.2f× (10); coef_rel_error %.3f; wrote %s (clasp.json, clasp.md, %d figures)\n", rep.SYNSpeedup5, rep.SYNSpeedup10, rep.CoefRelError, out, len(figs))
	return nil
}

// parseFractions parses -fractions: comma-separated fractions of a rate,
// each in (0, 1], strictly ascending, at least two.
func parseFractions(v string) ([]float64, error) {
	var out []float64
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return nil, usagef("eval clasp: -fractions entry %q, want a fraction in (0, 1]", s)
		}
		if n := len(out); n > 0 && f <= out[n-1] {
			return nil, usagef("eval clasp: -fractions %q is not strictly ascending (%s after %s)", v, s, strconv.FormatFloat(out[n-1], 'f', -1, 64))
		}
		out = append(out, f)
	}
	if len(out) < 2 {
		return nil, usagef("eval clasp: -fractions %q has %d entry, want at least 2", v, len(out))
	}
	return out, nil
}
