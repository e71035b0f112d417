package cli

import (
	"fmt"
	"slices"
	"strings"

	"streamscale/clasp"
	"streamscale/eval/claspexp"
	"streamscale/eval/hpaired"
)

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
		return 0, nil, fmt.Errorf("eval: %w", err)
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
			return 0, nil, fmt.Errorf("eval: simulated %s: %w", name, err)
		}
		top = sc[0].MaxRate[workers-1]
	} else {
		sc, err := claspexp.Scaling([]clasp.App{app}, []int{1, workers}, o.Probe)
		if err != nil {
			return 0, nil, fmt.Errorf("eval: simulated %s: %w", name, err)
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
		return 0, nil, fmt.Errorf("eval: simulated %s modes: %w", name, err)
	}
	return top, claspexp.SummarizeModes(rows), nil
}

// judgeMode computes one mode's claims from its run's summary (every
// method on every seed) and the simulated summaries.
func judgeMode(app string, r claimRun, s HLiveSummary, simTop float64, sim map[string]map[string]claspexp.ModeSummary) (*ModeClaims, error) {
	mc := &ModeClaims{Peak: r.peak, Seeds: r.seeds, SimTop: simTop, SimWorkers: 10, Methods: map[string]*ModeMethodClaims{}}
	for _, m := range claimMethods {
		mc.Methods[m] = &ModeMethodClaims{Sim: sim[app+"/"+r.trace][m]}
	}
	for _, run := range s.Runs {
		m := mc.Methods[run.Controller]
		if m == nil {
			return nil, fmt.Errorf("eval: %s: run %q is not one of %s", r.dir, run.Controller, strings.Join(claimMethods, ", "))
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
		if m.Runs != len(r.seeds) {
			return nil, fmt.Errorf("eval: %s holds %d runs of %s, want one per seed (%d)", r.dir, m.Runs, name, len(r.seeds))
		}
		n := float64(m.Runs)
		m.Delivered, m.P50MS, m.P95MS, m.MeanWorkers, m.ViolationShare = m.Delivered/n, m.P50MS/n, m.P95MS/n, m.MeanWorkers/n, m.ViolationShare/n
	}
	ps, err := hlivePaired(s)
	if err != nil {
		return nil, err
	}
	if ps.Candidate != claimMethods[0] {
		return nil, fmt.Errorf("eval: %s: first controller %s, want %s", r.dir, ps.Candidate, claimMethods[0])
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
