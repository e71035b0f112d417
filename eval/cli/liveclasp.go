package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"streamscale/eval/report"
	"streamscale/internal/command"
	"streamscale/serve/runtime/ops"
)

// The live CLASP protocol (`eval liveclasp`): per application with top
// rate T, three kinds of horizontal live runs, then the CLASP paper's
// figures computed from their summary.json files.
var (
	claimFractions = []float64{0.2, 0.6, 1}              // transition levels, × T
	claimRamp      = []float64{0.25, 0.5, 0.75, 1, 1.25} // ramp levels, × T
	claimMethods   = []string{"clasp", "faasflow", "zhang24"}
)

const (
	claimWarm, claimAfter = 10, 6 // transition points at the source and at the target
	claimFixedPoints      = 6     // points per level of the fixed-count runs
	claimRampPoints       = 4     // points per ramp level
	claimSkip             = 2     // points of a level not judged (the change settling)
	claimRatio            = 0.95  // throughput a sustained level delivers, × its rate
)

// ClaspClaims is claims.json of `eval liveclasp`: per application the live
// observed optimal worker counts, and per method the worker-count error,
// the ramp and the migrations.
type ClaspClaims struct {
	MaxWorkers int                   `json:"max_workers"`
	SLOMS      float64               `json:"slo_ms"`
	Apps       map[string]*AppClaims `json:"apps"`
	Commit     string                `json:"commit"`
	GoVersion  string                `json:"go_version"`
}

// AppClaims is one application's figures.
type AppClaims struct {
	Top float64 `json:"top_rate"`
	// OOWC is, per transition level (inputs/s, as text), the fewest fixed
	// workers that sustained it (MaxWorkers+1: none).
	OOWC    map[string]int           `json:"oowc"`
	Methods map[string]*MethodClaims `json:"methods"`
	Rows    []TransitionClaim        `json:"transitions"`
}

// TransitionClaim is one method's worker count after one transition.
type TransitionClaim struct {
	Method    string  `json:"method"`
	From      float64 `json:"from"`
	To        float64 `json:"to"`
	Needed    int     `json:"needed"`
	Workers   int     `json:"workers"`
	Intervals int     `json:"intervals"`
	Delivered float64 `json:"delivered"`
}

// MethodClaims is one method's figures on one application.
type MethodClaims struct {
	WorkerError       float64 `json:"worker_error"`
	Transitions       int     `json:"transitions"`
	DeliveredMean     float64 `json:"transition_delivered_mean"`
	RampSustained     float64 `json:"ramp_sustained"` // highest level sustained, inputs/s (0: none)
	RampAll           bool    `json:"ramp_all_levels"`
	RampDelivered     float64 `json:"ramp_delivered"`
	RampP50MS         float64 `json:"ramp_p50_ms"`
	RampP95MS         float64 `json:"ramp_p95_ms"`
	RampMeanWorkers   float64 `json:"ramp_mean_workers"`
	Migrations        int     `json:"migrations"`
	PlannerMSMedian   float64 `json:"migration_planner_ms_median"`
	PlannerMSMax      float64 `json:"migration_planner_ms_max"`
	PauseMSMedian     float64 `json:"migration_worker_pause_ms_median"`
	PauseMSMax        float64 `json:"migration_worker_pause_ms_max"`
	Failovers         int     `json:"failovers"`
	plannerMS, pauses []float64
}

// liveclaspCmd runs (unless -analyze) and judges the live CLASP protocol.
func liveclaspCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval liveclasp")
	apps := fs.String("apps", "syn:200,wc:16000,sd:32000", "APP:TOP[,…]: applications and their top rate T, inputs/s (transitions at 20/60/100% of T, ramp 25…125%)")
	maxWorkers := fs.Int("max-workers", 4, "most workers a controller may use (and the largest fixed count)")
	taskMC := fs.Int("task-mc", 1000, "CFS quota of every task in every worker, millicores")
	sloMS := fs.Float64("slo-ms", 1000, "a sustained level's p95 at its end stays at or under this, ms")
	seed := fs.Uint64("seed", 1, "seed of the input source")
	out := fs.String("out", "out/liveclasp", "output directory: one subdirectory per run, claims.json and claims.md")
	analyze := fs.Bool("analyze", false, "only judge the runs already in -out")
	verbose := fs.Bool("v", false, "log the runtime's events to stderr")
	costModel := fs.String("cost-model", "", costModelUsage)
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	if _, _, err := hliveMethods(*costModel, "", *maxWorkers); err != nil {
		return err
	}
	type appTop struct {
		name string
		top  float64
	}
	var list []appTop
	for _, s := range strings.Split(*apps, ",") {
		a, t, ok := strings.Cut(strings.TrimSpace(s), ":")
		top, err := strconv.ParseFloat(t, 64)
		if !ok || err != nil || !(top > 0 && top <= 1e6) || !isHorizontalProfile(a) {
			return usagef("eval: -apps entry %q, want APP:TOP with APP a CLASP application (%s) and 0 < TOP ≤ 1e6", s, strings.Join(horizontalApps(), ", "))
		}
		list = append(list, appTop{a, top})
	}
	switch {
	case *maxWorkers < 1 || *maxWorkers > 16:
		return usagef("eval: -max-workers %d, want 1..16", *maxWorkers)
	case *taskMC < 1 || *taskMC > 64000:
		return usagef("eval: -task-mc %d, want 1..64000", *taskMC)
	case !(*sloMS > 0):
		return usagef("eval: -slo-ms %v, want > 0", *sloMS)
	}
	claims := ClaspClaims{MaxWorkers: *maxWorkers, SLOMS: *sloMS, Apps: map[string]*AppClaims{}, Commit: o.Commit, GoVersion: o.GoVersion}
	for _, a := range list {
		runs := claimRuns(a.name, a.top, *maxWorkers)
		if !*analyze {
			for _, r := range runs {
				hf := hliveFlags{profile: a.name, trace: r.trace, out: filepath.Join(*out, r.dir), specs: r.specs, scale: time.Second,
					scaleSet: true, mult: 1, sloMS: *sloMS, workers: 1, maxWorkers: *maxWorkers, taskMC: *taskMC, seed: *seed, verbose: *verbose, costModel: *costModel}
				quiet := o
				quiet.Stdout = io.Discard
				if err := hlive(ctx, hf, quiet); err != nil {
					return err
				}
			}
		}
		ac, err := judgeApp(*out, a.name, a.top, runs, *maxWorkers, *sloMS)
		if err != nil {
			return err
		}
		claims.Apps[a.name] = ac
	}
	b, err := report.MarshalJSON(claims)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "claims.json"), b, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	md := claimsMarkdown(claims, list[0].name)
	for _, a := range list[1:] {
		md = append(md, claimsMarkdown(claims, a.name)...)
	}
	if err := os.WriteFile(filepath.Join(*out, "claims.md"), md, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	_, err = o.Stdout.Write(md)
	return err
}

func horizontalApps() []string {
	var out []string
	for _, a := range ops.AppNames() {
		if isHorizontalProfile(a) {
			out = append(out, a)
		}
	}
	return out
}

// claimRun is one command of the protocol.
type claimRun struct {
	kind   string // ramp, fixed, transition
	dir    string
	trace  string
	specs  []string
	levels []float64 // rates, inputs/s
	points []int
}

func level(f, top float64) float64 { return math.Round(f * top) }

func levelsTrace(rates []float64, points []int) string {
	parts := make([]string, len(rates))
	for i := range rates {
		parts[i] = strconv.FormatFloat(rates[i], 'f', -1, 64) + "x" + strconv.Itoa(points[i])
	}
	return "levels:" + strings.Join(parts, ",")
}

// claimRuns lists the protocol's commands for one application.
func claimRuns(app string, top float64, maxWorkers int) []claimRun {
	var runs []claimRun
	var rl []float64
	var rp []int
	for _, f := range claimRamp {
		rl, rp = append(rl, level(f, top)), append(rp, claimRampPoints)
	}
	runs = append(runs, claimRun{kind: "ramp", dir: app + "-ramp", trace: levelsTrace(rl, rp), specs: claimMethods, levels: rl, points: rp})
	var fl []float64
	var fp []int
	for _, f := range claimFractions {
		fl, fp = append(fl, level(f, top)), append(fp, claimFixedPoints)
	}
	var fixed []string
	for n := 1; n <= maxWorkers; n++ {
		fixed = append(fixed, "fixed:"+strconv.Itoa(n))
	}
	runs = append(runs, claimRun{kind: "fixed", dir: app + "-fixed", trace: levelsTrace(fl, fp), specs: fixed, levels: fl, points: fp})
	for _, a := range claimFractions {
		for _, b := range claimFractions {
			if a == b {
				continue
			}
			l, p := []float64{level(a, top), level(b, top)}, []int{claimWarm, claimAfter}
			runs = append(runs, claimRun{kind: "transition", dir: fmt.Sprintf("%s-tr-%g-%g", app, a, b), trace: levelsTrace(l, p), specs: claimMethods, levels: l, points: p})
		}
	}
	return runs
}

// sustained reports, per level of a run, whether it was sustained: the
// mean throughput over the level's points after the first claimSkip is at
// least claimRatio × the rate, and the p95 of its last recorded point is
// at most sloMS.
func sustained(r HLiveRun, levels []float64, points []int, sloMS float64) []bool {
	out := make([]bool, len(levels))
	i := 0
	for k, rate := range levels {
		lo, hi := i+claimSkip, min(i+points[k], len(r.ThroughputPerStep))
		i += points[k]
		if hi <= lo {
			continue
		}
		sum := 0.0
		for j := lo; j < hi; j++ {
			sum += r.ThroughputPerStep[j]
		}
		out[k] = sum/float64(hi-lo) >= claimRatio*rate && r.P95PerStep[hi-1] <= sloMS
	}
	return out
}

func readHLive(dir string) (HLiveSummary, error) {
	var s HLiveSummary
	b, err := os.ReadFile(filepath.Join(dir, FileSummary))
	if err != nil {
		return s, fmt.Errorf("eval: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("eval: %s: %w", dir, err)
	}
	return s, nil
}

// judgeApp computes one application's figures from its runs' summaries.
func judgeApp(out, app string, top float64, runs []claimRun, maxWorkers int, sloMS float64) (*AppClaims, error) {
	ac := &AppClaims{Top: top, OOWC: map[string]int{}, Methods: map[string]*MethodClaims{}}
	for _, m := range claimMethods {
		ac.Methods[m] = &MethodClaims{}
	}
	key := func(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }
	sums := make([]HLiveSummary, len(runs))
	for i, r := range runs {
		s, err := readHLive(filepath.Join(out, r.dir))
		if err != nil {
			return nil, err
		}
		if s.Trace != r.trace {
			return nil, fmt.Errorf("eval: %s ran %s, the protocol's run is %s", r.dir, s.Trace, r.trace)
		}
		sums[i] = s
	}
	for i, r := range runs {
		if r.kind != "fixed" {
			continue
		}
		for _, l := range r.levels {
			ac.OOWC[key(l)] = maxWorkers + 1
		}
		for _, run := range sums[i].Runs {
			n, err := strconv.Atoi(strings.TrimPrefix(run.Controller, "fixed:"))
			if err != nil {
				return nil, fmt.Errorf("eval: %s: run %q is not fixed:N", r.dir, run.Controller)
			}
			for k, ok := range sustained(run, r.levels, r.points, sloMS) {
				if ok && n < ac.OOWC[key(r.levels[k])] {
					ac.OOWC[key(r.levels[k])] = n
				}
			}
		}
	}
	for i, r := range runs {
		for _, run := range sums[i].Runs {
			mc := ac.Methods[run.Controller]
			if mc == nil {
				continue
			}
			for _, m := range run.MigrationLog {
				mc.plannerMS = append(mc.plannerMS, m.PlannerMS)
				mc.pauses = append(mc.pauses, m.PauseMSMax)
				if m.Reason == "failover" {
					mc.Failovers++
				}
			}
			switch r.kind {
			case "transition":
				need := ac.OOWC[key(r.levels[1])]
				final := 0
				if n := len(run.WorkersPerStep); n > 0 {
					final = run.WorkersPerStep[n-1]
				}
				ac.Rows = append(ac.Rows, TransitionClaim{Method: run.Controller, From: r.levels[0], To: r.levels[1], Needed: need, Workers: final,
					Intervals: len(run.WorkersPerStep), Delivered: run.Delivered})
				mc.WorkerError += math.Abs(float64(final - need))
				mc.DeliveredMean += run.Delivered
				mc.Transitions++
			case "ramp":
				ok := sustained(run, r.levels, r.points, sloMS)
				mc.RampAll = !slices.Contains(ok, false)
				for k := range ok {
					if ok[k] {
						mc.RampSustained = r.levels[k]
					}
				}
				mc.RampDelivered, mc.RampP50MS, mc.RampP95MS, mc.RampMeanWorkers = run.Delivered, run.P50MS, run.P95MS, run.MeanWorkers
			}
		}
	}
	for _, mc := range ac.Methods {
		if mc.Transitions > 0 {
			mc.WorkerError /= float64(mc.Transitions)
			mc.DeliveredMean /= float64(mc.Transitions)
		}
		mc.Migrations = len(mc.plannerMS)
		mc.PlannerMSMedian, mc.PlannerMSMax = median(mc.plannerMS), slices.Max(append(mc.plannerMS, 0))
		mc.PauseMSMedian, mc.PauseMSMax = median(mc.pauses), slices.Max(append(mc.pauses, 0))
	}
	return ac, nil
}

// median is the median of xs (mean of the middle two; 0 when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// claimsMarkdown is one application's table of claims.md.
func claimsMarkdown(c ClaspClaims, app string) []byte {
	ac := c.Apps[app]
	var b strings.Builder
	var oowc []string
	for _, f := range claimFractions {
		l := level(f, ac.Top)
		oowc = append(oowc, fmt.Sprintf("%g: %d", l, ac.OOWC[strconv.FormatFloat(l, 'f', -1, 64)]))
	}
	fmt.Fprintf(&b, "## %s (top %g inputs/s, at most %d workers)\n\nOOWC by level (inputs/s: workers; %d = none sustained): %s\n\n", app, ac.Top, c.MaxWorkers, c.MaxWorkers+1, strings.Join(oowc, ", "))
	b.WriteString("| method | worker error | transitions | delivered (transitions) | ramp sustained /s | ramp delivered | ramp p50 / p95 ms | ramp workers | migrations | planner ms median / max | pause ms median / max | failovers |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range claimMethods {
		mc := ac.Methods[m]
		ramp := fmt.Sprintf("%g", mc.RampSustained)
		if mc.RampAll {
			ramp = "≥ " + ramp
		}
		fmt.Fprintf(&b, "| %s | %.2f | %d | %.3f | %s | %.3f | %.0f / %.0f | %.2f | %d | %.1f / %.1f | %.2f / %.2f | %d |\n", m, mc.WorkerError, mc.Transitions,
			mc.DeliveredMean, ramp, mc.RampDelivered, mc.RampP50MS, mc.RampP95MS, mc.RampMeanWorkers, mc.Migrations, mc.PlannerMSMedian, mc.PlannerMSMax,
			mc.PauseMSMedian, mc.PauseMSMax, mc.Failovers)
	}
	b.WriteString("\n")
	return []byte(b.String())
}
