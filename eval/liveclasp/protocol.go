package liveclasp

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"streamscale/clasp"
	"streamscale/eval/claspexp"
	"streamscale/eval/hpaired"
	"streamscale/eval/stats"
	"streamscale/internal/command"
)

// The live CLASP protocol (`eval liveclasp`): per application with top
// rate T, three kinds of horizontal live runs, then the CLASP paper's
// figures computed from their summary.json files.
var (
	claimFractions = []float64{0.2, 0.6, 1}              // transition levels, × T
	claimRamp      = []float64{0.25, 0.5, 0.75, 1, 1.25} // ramp levels, × T
	claimMethods   = []string{"clasp", "faasflow", "zhang24"}
	claimModes     = []string{"burst", "gradual"} // claspexp.ModeTraces
)

const (
	claimWarm, claimAfter = 10, 6 // transition points at the source and at the target
	claimFixedPoints      = 6     // points per level of the fixed-count runs
	claimRampPoints       = 4     // points per ramp level
	claimSkip             = 2     // points of a level not judged (the change settling)
	claimRatio            = 0.95  // throughput a sustained level delivers, × its rate
)

// Claims is claims.json of `eval liveclasp`: per application the live
// observed optimal worker counts, and per method the worker-count error,
// the ramp and the migrations.
type Claims struct {
	MaxWorkers int                   `json:"max_workers"`
	SLOMS      float64               `json:"slo_ms"`
	TaskMC     int                   `json:"task_millicores"`
	Budget     int                   `json:"worker_budget_millicores,omitempty"`
	BudgetProc bool                  `json:"worker_budget_process,omitempty"`
	Apps       map[string]*AppClaims `json:"apps"`
	command.Build
}

// AppClaims is one application's figures.
type AppClaims struct {
	Top float64 `json:"top_rate"`
	// OOWC is, per transition level (inputs/s, as text), the fewest fixed
	// workers that sustained it (MaxWorkers+1: none).
	OOWC    map[string]int           `json:"oowc"`
	Methods map[string]*MethodClaims `json:"methods"`
	Rows    []TransitionClaim        `json:"transitions"`
	// Modes are the load-mode runs (-modes), by mode; absent without.
	Modes map[string]*ModeClaims `json:"modes,omitempty"`
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

// ClaimRun is one command of the protocol.
type ClaimRun struct {
	Kind   string    // ramp, fixed, transition or mode
	Dir    string    // the run's subdirectory of the protocol's output
	Trace  string    // eval live's -trace
	Specs  []string  // eval live's -controllers
	Levels []float64 // rates, inputs/s
	Points []int     // points (intervals) per level
	// A load-mode run (kind "mode", trace burst or gradual): its peak
	// rate, inputs/s, and its seeds.
	Peak  float64
	Seeds []uint64
}

// matches reports whether s is this run's summary: its trace, and for a
// load mode its peak and seeds.
func (r ClaimRun) Matches(s Summary) error {
	if s.Trace != r.Trace {
		return fmt.Errorf("liveclasp: %s ran %s, the protocol's run is %s", r.Dir, s.Trace, r.Trace)
	}
	if r.Kind != "mode" {
		return nil
	}
	seeds := s.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{s.Seed}
	}
	if s.PeakRate != r.Peak || !slices.Equal(seeds, r.Seeds) {
		return fmt.Errorf("liveclasp: %s ran %s at peak %g on seeds %v, the protocol's run is peak %g on seeds %v (-seed, -mode-seeds)", r.Dir, s.Trace,
			s.PeakRate, seeds, r.Peak, r.Seeds)
	}
	return nil
}

// modeRuns lists the load-mode runs of one application: every method on
// each mode, peak top, seeds seed … seed+n−1.
func ModeRuns(app string, top float64, modes []string, seed uint64, n int) []ClaimRun {
	var seeds []uint64
	for k := range n {
		seeds = append(seeds, seed+uint64(k))
	}
	var runs []ClaimRun
	for _, m := range modes {
		runs = append(runs, ClaimRun{Kind: "mode", Dir: app + "-" + m, Trace: m, Specs: claimMethods, Peak: top, Seeds: seeds})
	}
	return runs
}

func level(f, top float64) float64 { return math.Round(f * top) }

// levelKey is a level's key in AppClaims.OOWC: its rate as text.
func levelKey(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

func levelsTrace(rates []float64, points []int) string {
	parts := make([]string, len(rates))
	for i := range rates {
		parts[i] = strconv.FormatFloat(rates[i], 'f', -1, 64) + "x" + strconv.Itoa(points[i])
	}
	return "levels:" + strings.Join(parts, ",")
}

// ClaimRuns lists the protocol's commands for one application.
func ClaimRuns(app string, top float64, maxWorkers int) []ClaimRun {
	var runs []ClaimRun
	var rl []float64
	var rp []int
	for _, f := range claimRamp {
		rl, rp = append(rl, level(f, top)), append(rp, claimRampPoints)
	}
	runs = append(runs, ClaimRun{Kind: "ramp", Dir: app + "-ramp", Trace: levelsTrace(rl, rp), Specs: claimMethods, Levels: rl, Points: rp})
	var fl []float64
	var fp []int
	for _, f := range claimFractions {
		fl, fp = append(fl, level(f, top)), append(fp, claimFixedPoints)
	}
	var fixed []string
	for n := 1; n <= maxWorkers; n++ {
		fixed = append(fixed, "fixed:"+strconv.Itoa(n))
	}
	runs = append(runs, ClaimRun{Kind: "fixed", Dir: app + "-fixed", Trace: levelsTrace(fl, fp), Specs: fixed, Levels: fl, Points: fp})
	for _, a := range claimFractions {
		for _, b := range claimFractions {
			if a == b {
				continue
			}
			l, p := []float64{level(a, top), level(b, top)}, []int{claimWarm, claimAfter}
			runs = append(runs, ClaimRun{Kind: "transition", Dir: fmt.Sprintf("%s-tr-%g-%g", app, a, b), Trace: levelsTrace(l, p), Specs: claimMethods, Levels: l, Points: p})
		}
	}
	return runs
}

// sustained reports, per level of a run, whether it was sustained: the
// mean throughput over the level's points after the first claimSkip is at
// least claimRatio × the rate, and the p95 of its last recorded point is
// at most sloMS.
func sustained(r ControllerRun, levels []float64, points []int, sloMS float64) []bool {
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

// JudgeApp computes one application's figures from its runs' summaries
// (sums[i] is runs[i]'s, each checked with Matches): the OOWC per level
// from the fixed-count runs, per method the worker-count error after the
// transitions, the ramp and the migrations, and, for load-mode runs, the
// mode claims beside eval clasp's simulated ones (simModes).
func JudgeApp(app string, top float64, runs []ClaimRun, sums []Summary, maxWorkers int, sloMS float64) (*AppClaims, error) {
	if len(sums) != len(runs) {
		return nil, fmt.Errorf("liveclasp: %d summaries for %d runs of %s", len(sums), len(runs), app)
	}
	for i, r := range runs {
		if err := r.Matches(sums[i]); err != nil {
			return nil, err
		}
	}
	ac := &AppClaims{Top: top, OOWC: map[string]int{}, Methods: map[string]*MethodClaims{}}
	for _, m := range claimMethods {
		ac.Methods[m] = &MethodClaims{}
	}
	if err := judgeFixed(ac, runs, sums, maxWorkers, sloMS); err != nil {
		return nil, err
	}
	var (
		simTop float64
		sim    map[string]map[string]claspexp.ModeSummary
	)
	for _, r := range runs {
		if r.Kind == "mode" {
			var err error
			if simTop, sim, err = simModes(app, r.Seeds); err != nil {
				return nil, err
			}
			break
		}
	}
	for i, r := range runs {
		if r.Kind == "mode" {
			mcl, err := judgeMode(app, r, sums[i], simTop, sim)
			if err != nil {
				return nil, err
			}
			if ac.Modes == nil {
				ac.Modes = map[string]*ModeClaims{}
			}
			ac.Modes[r.Trace] = mcl
			continue
		}
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
			switch r.Kind {
			case "transition":
				need := ac.OOWC[levelKey(r.Levels[1])]
				final := 0
				if n := len(run.WorkersPerStep); n > 0 {
					final = run.WorkersPerStep[n-1]
				}
				ac.Rows = append(ac.Rows, TransitionClaim{Method: run.Controller, From: r.Levels[0], To: r.Levels[1], Needed: need, Workers: final,
					Intervals: len(run.WorkersPerStep), Delivered: run.Delivered})
				mc.WorkerError += math.Abs(float64(final - need))
				mc.DeliveredMean += run.Delivered
				mc.Transitions++
			case "ramp":
				ok := sustained(run, r.Levels, r.Points, sloMS)
				mc.RampAll = !slices.Contains(ok, false)
				for k := range ok {
					if ok[k] {
						mc.RampSustained = r.Levels[k]
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
		mc.PlannerMSMedian, mc.PlannerMSMax = medianOr0(mc.plannerMS), slices.Max(append(mc.plannerMS, 0))
		mc.PauseMSMedian, mc.PauseMSMax = medianOr0(mc.pauses), slices.Max(append(mc.pauses, 0))
	}
	return ac, nil
}

// judgeFixed sets ac's OOWC from the fixed-count runs: per level the
// fewest fixed workers that sustained it (maxWorkers+1: none).
func judgeFixed(ac *AppClaims, runs []ClaimRun, sums []Summary, maxWorkers int, sloMS float64) error {
	key := levelKey
	for i, r := range runs {
		if r.Kind != "fixed" {
			continue
		}
		for _, l := range r.Levels {
			ac.OOWC[key(l)] = maxWorkers + 1
		}
		for _, run := range sums[i].Runs {
			n, err := strconv.Atoi(strings.TrimPrefix(run.Controller, "fixed:"))
			if err != nil {
				return fmt.Errorf("liveclasp: %s: run %q is not fixed:N", r.Dir, run.Controller)
			}
			for k, ok := range sustained(run, r.Levels, r.Points, sloMS) {
				if ok && n < ac.OOWC[key(r.Levels[k])] {
					ac.OOWC[key(r.Levels[k])] = n
				}
			}
		}
	}
	return nil
}

// ClaimsMarkdown is one application's table of claims.md.
func ClaimsMarkdown(c Claims, app string) []byte {
	ac := c.Apps[app]
	var b strings.Builder
	var oowc []string
	for _, f := range claimFractions {
		l := level(f, ac.Top)
		oowc = append(oowc, fmt.Sprintf("%g: %d", l, ac.OOWC[strconv.FormatFloat(l, 'f', -1, 64)]))
	}
	quota := fmt.Sprintf("%d mc per task", c.TaskMC)
	if c.Budget > 0 {
		quota += fmt.Sprintf(", a budget of %d mc per worker", c.Budget)
		if c.BudgetProc {
			quota += " (the kernel's quota on the whole worker process)"
		}
	}
	fmt.Fprintf(&b, "## %s (top %g inputs/s, at most %d workers, %s)\n\nOOWC by level (inputs/s: workers; %d = none sustained): %s\n\n", app, ac.Top, c.MaxWorkers, quota, c.MaxWorkers+1, strings.Join(oowc, ", "))
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
	b.Write(modesMarkdown(app, ac))
	return []byte(b.String())
}

// ModeClaims is one application's load-mode runs (eval liveclasp -modes)
// in one mode: per method the live figures, means over the seeds, beside
// the simulated ones of eval clasp's experiment (6) on the same seeds, and
// CLASP paired against each baseline by seed.
type ModeClaims struct {
	Peak  float64  `json:"peak_rate"` // live 100% rate, inputs/s (the app's top T)
	Seeds []uint64 `json:"seeds"`
	// SimTop and SimWorkers are the simulated runs' 100% rate (eval
	// clasp's: the 10-worker sustained rate) and their cluster size.
	SimTop     float64                      `json:"sim_top_rate"`
	SimWorkers int                          `json:"sim_workers"`
	Methods    map[string]*ModeMethodClaims `json:"methods"`
	Paired     hpaired.Summary              `json:"paired"`
}

// ModeMethodClaims is one method's figures in one mode. The live ones
// are means over the seeds of each run's delivered share, p50 and p95
// over every input, mean workers in use and violation share (intervals
// with p95 above -slo-ms); Sim is eval clasp's ModeSummary (delivered
// share, median and p95 latency, mean workers).
type ModeMethodClaims struct {
	Runs           int                  `json:"runs"`
	Delivered      float64              `json:"delivered"`
	P50MS          float64              `json:"p50_ms"`
	P95MS          float64              `json:"p95_ms"`
	MeanWorkers    float64              `json:"mean_workers"`
	ViolationShare float64              `json:"violation_share"`
	Migrations     int                  `json:"migrations"`
	Failovers      int                  `json:"failovers"`
	Sim            claspexp.ModeSummary `json:"sim"`
}

// simModes runs eval clasp's experiment (6) for one app, the CLASP
// methods of the protocol, on the given mode seeds: 10 workers, the
// 10-worker sustained rate as 100% (taken as Reproduce takes it: from the
// steady-state probe of CLASP's placements for the apps of its
// worker-count experiment, from the default probe otherwise). It returns
// that rate and the summaries by "<app>/<mode>" and method.
func simModes(name string, seeds []uint64) (float64, map[string]map[string]claspexp.ModeSummary, error) {
	app, err := clasp.AppByName(name)
	if err != nil {
		return 0, nil, fmt.Errorf("liveclasp: %w", err)
	}
	const workers = 10
	o := claspexp.DefaultOptions()
	var top float64
	if slices.ContainsFunc(o.WorkerApps, func(a clasp.App) bool { return a.Name == app.Name }) {
		all := make([]int, workers)
		for i := range all {
			all[i] = i + 1
		}
		sc, err := claspexp.ScalingWith([]clasp.App{app}, all, claspexp.SteadyProbe(o.Probe), claspexp.CLASPPlacer)
		if err != nil {
			return 0, nil, fmt.Errorf("liveclasp: simulated %s: %w", name, err)
		}
		top = sc[0].MaxRate[workers-1]
	} else {
		sc, err := claspexp.Scaling([]clasp.App{app}, []int{1, workers}, o.Probe)
		if err != nil {
			return 0, nil, fmt.Errorf("liveclasp: simulated %s: %w", name, err)
		}
		top = sc[0].MaxRate[1]
	}
	var methods []claspexp.Method
	for _, m := range claspexp.Methods(workers) {
		if slices.Contains(claimMethods, m.Name) {
			methods = append(methods, m)
		}
	}
	rows, err := claspexp.Modes(app, top, workers, methods, seeds, o.MaxInFlight)
	if err != nil {
		return 0, nil, fmt.Errorf("liveclasp: simulated %s modes: %w", name, err)
	}
	return top, claspexp.SummarizeModes(rows), nil
}

// judgeMode computes one mode's claims from its run's summary (every
// method on every seed) and the simulated summaries.
func judgeMode(app string, r ClaimRun, s Summary, simTop float64, sim map[string]map[string]claspexp.ModeSummary) (*ModeClaims, error) {
	mc := &ModeClaims{Peak: r.Peak, Seeds: r.Seeds, SimTop: simTop, SimWorkers: 10, Methods: map[string]*ModeMethodClaims{}}
	for _, m := range claimMethods {
		mc.Methods[m] = &ModeMethodClaims{Sim: sim[app+"/"+r.Trace][m]}
	}
	for _, run := range s.Runs {
		m := mc.Methods[run.Controller]
		if m == nil {
			return nil, fmt.Errorf("liveclasp: %s: run %q is not one of %s", r.Dir, run.Controller, strings.Join(claimMethods, ", "))
		}
		m.Runs++
		m.Delivered += run.HInfo.Delivered
		m.P50MS += run.P50MS
		m.P95MS += run.HInfo.P95MS
		m.MeanWorkers += run.HInfo.MeanWorkers
		m.ViolationShare += run.ViolationRate
		m.Migrations += run.Migrations
		m.Failovers += run.Failovers
	}
	for _, name := range claimMethods {
		m := mc.Methods[name]
		if m.Runs != len(r.Seeds) {
			return nil, fmt.Errorf("liveclasp: %s holds %d runs of %s, want one per seed (%d)", r.Dir, m.Runs, name, len(r.Seeds))
		}
		n := float64(m.Runs)
		m.Delivered, m.P50MS, m.P95MS, m.MeanWorkers, m.ViolationShare = m.Delivered/n, m.P50MS/n, m.P95MS/n, m.MeanWorkers/n, m.ViolationShare/n
	}
	ps, err := Paired(s)
	if err != nil {
		return nil, err
	}
	if ps.Candidate != claimMethods[0] {
		return nil, fmt.Errorf("liveclasp: %s: first controller %s, want %s", r.Dir, ps.Candidate, claimMethods[0])
	}
	mc.Paired = ps
	return mc, nil
}

// modesMarkdown is one application's load-mode tables of claims.md.
func modesMarkdown(app string, ac *AppClaims) []byte {
	var b strings.Builder
	for _, mode := range claimModes {
		mc := ac.Modes[mode]
		if mc == nil {
			continue
		}
		fmt.Fprintf(&b, "### %s, %s mode (live peak %g inputs/s, seeds %s; simulated: 10 workers, peak %.0f)\n\n", app, mode, mc.Peak, seedList(mc.Seeds), mc.SimTop)
		b.WriteString("| method | live delivered | live p50 / p95 ms | live workers | live violation share | migrations | failovers | sim delivered | sim median / p95 ms | sim workers |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, name := range claimMethods {
			m := mc.Methods[name]
			fmt.Fprintf(&b, "| %s | %.3f | %.0f / %.0f | %.2f | %.3f | %d | %d | %.3f | %.0f / %.0f | %.2f |\n", name, m.Delivered, m.P50MS, m.P95MS, m.MeanWorkers,
				m.ViolationShare, m.Migrations, m.Failovers, m.Sim.Delivered, m.Sim.MedianMS, m.Sim.P95MS, m.Sim.Workers)
		}
		b.WriteString("\n")
		b.WriteString(hpaired.Markdown(mc.Paired))
		b.WriteString("\n")
	}
	return []byte(b.String())
}

func seedList(s []uint64) string {
	p := make([]string, len(s))
	for i, x := range s {
		p[i] = fmt.Sprint(x)
	}
	return strings.Join(p, ", ")
}

// medianOr0 is the median of xs (stats.Median), 0 when xs is empty.
func medianOr0(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// Modes are the CLASP load modes a protocol may add (claspexp.ModeTraces).
func Modes() []string { return slices.Clone(claimModes) }
