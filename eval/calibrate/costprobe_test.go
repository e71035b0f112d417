package calibrate

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"streamscale/serve/runtime"
)

// TestFitLine: a common slope with one intercept per group is recovered
// exactly from points on the lines, its CI is 0 there and positive with
// noise, and unidentified inputs are refused.
func TestFitLine(t *testing.T) {
	var pts []LinePoint
	for g, c := range []float64{10, -4} {
		for _, x := range []float64{0, 1, 2, 5} {
			pts = append(pts, LinePoint{Group: g, X: x, Y: c + 3*x})
		}
	}
	f, ok := FitLine(pts)
	if !ok || math.Abs(f.Slope-3) > 1e-12 || math.Abs(f.Intercepts[0]-10) > 1e-12 || math.Abs(f.Intercepts[1]+4) > 1e-12 || f.R2 < 1-1e-12 || f.SlopeCI95 > 1e-9 || f.Groups != 2 {
		t.Errorf("fit %+v, want slope 3, intercepts 10 and -4, R² 1, CI 0", f)
	}
	pts[0].Y += 1
	if f, ok = FitLine(pts); !ok || !(f.SlopeCI95 > 0) || !(f.R2 < 1) {
		t.Errorf("noisy fit %+v: want a positive CI and R² < 1", f)
	}
	for name, bad := range map[string][]LinePoint{
		"too few":      {{X: 1, Y: 1}, {X: 2, Y: 2}},
		"x constant":   {{X: 1, Y: 1}, {X: 1, Y: 2}, {X: 1, Y: 3}},
		"group gap":    {{Group: 2, X: 1}, {X: 2}, {X: 3}, {X: 4}},
		"not finite":   {{X: math.NaN()}, {X: 2}, {X: 3}},
		"negative grp": {{Group: -1, X: 1}, {X: 2}, {X: 3}},
	} {
		if _, ok := FitLine(bad); ok {
			t.Errorf("%s: fitted", name)
		}
	}
}

// synthetic returns the probe's points of a worker fleet obeying Eq. 1
// with the given costs: each worker pays an idle cost (its own, per run),
// the ingress per input at the source, α per local request, s per remote
// send and v per remote receive (β = s + v), γ per destination, and the
// operators' execution; every worker of a run (the reference too) shares
// a drift of sd driftSD µs/s (the host's load of the moment), and noise is
// the sd of a relative error on the CPU.
func synthetic(alpha, s, v, gamma, budget, noise, driftSD float64, seed uint64) []CostPoint {
	r := rand.New(rand.NewPCG(seed, 1))
	chain := runtime.Chain("chain", 10, 0)
	exec := make([]float64, 10)
	for i := range exec {
		exec[i] = 0.1
	}
	var out []CostPoint
	for _, l := range costLayouts(chain, 4000, runtime.Chain("syn", 10, 400*time.Microsecond), 1500) {
		if l.term == "budget" {
			p := CostPoint{Layout: l.name, Term: l.term, Rate: l.rate}
			for range 6 {
				local := 9 * 300 * (1 + 0.05*r.NormFloat64())
				p.Sat = append(p.Sat, SatInterval{ExecUS: budget - alpha*local, LocalRate: local})
			}
			out = append(out, p)
			continue
		}
		pts := nominalRates(l, exec)
		recv := make([]float64, len(pts))
		// With keys staying with their input, worker 0 receives nothing
		// and the others receive what worker 0 and each other send:
		// split the remote total evenly for the test's purpose.
		var remote float64
		for _, p := range pts {
			remote += p.RemoteRate
		}
		senders := len(pts) - 1 // the last is the reference
		for w := range senders {
			if l.term == "gamma" && w > 0 {
				recv[w] = pts[0].RemoteRate / float64(senders-1)
			} else if l.term != "gamma" {
				recv[w] = remote - pts[w].RemoteRate
			}
		}
		drift := driftSD * r.NormFloat64() // the host's load of the moment: every worker of the run
		for w := range pts {
			p := &pts[w]
			p.Worker = w
			cpu := 40000 + drift + 500*r.Float64() + p.ExecUS + alpha*p.LocalRate + s*p.RemoteRate + v*recv[w] + gamma*p.Dests
			if w == 0 {
				cpu += 3 * l.rate // ingress
			}
			p.CPUUS = max(0, cpu*(1+noise*r.NormFloat64()))
		}
		out = append(out, pts...)
	}
	return out
}

// TestFitCostModel: α, β, γ and W of a synthetic fleet are recovered
// within tolerance (exactly without the idle cost's spread and noise:
// within their CI with them), and a negative α is refused by name.
func TestFitCostModel(t *testing.T) {
	const alpha, s, v, gamma, budget = 1.5, 2.0, 2.5, 5000.0, 2e6
	m, terms, err := FitCostModel(synthetic(alpha, s, v, gamma, budget, 0.002, 20000, 1), DefaultCostFitConfig())
	if err != nil {
		t.Fatalf("%v\n%+v", err, terms)
	}
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{{"alpha", m.Alpha, alpha, 0.3}, {"beta", m.Beta, s + v, 0.6}, {"gamma", m.Gamma, gamma, 1500}, {"budget", m.Budget, budget, 1e4}} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s %.4g, want %.4g ± %g (terms %+v)", c.name, c.got, c.want, c.tol, terms)
		}
	}
	for _, tm := range terms {
		if !tm.Accepted || (tm.Name != "budget" && (tm.Fit == nil || !(tm.CI95 > 0))) {
			t.Errorf("term %+v: want accepted with a fit and a CI", tm)
		}
	}
	_, terms, err = FitCostModel(synthetic(-0.5, s, v, gamma, budget, 0.002, 20000, 2), DefaultCostFitConfig())
	if !errors.Is(err, ErrCostTerm) || !strings.Contains(err.Error(), "alpha: negative estimate") {
		t.Fatalf("negative α: error %v, want ErrCostTerm naming alpha", err)
	}
	if terms[0].Accepted || terms[0].Value >= 0 {
		t.Errorf("alpha %+v accepted", terms[0])
	}
	// γ = 0: refused by default (a flat line has R² ≈ 0), written as 0
	// with ZeroUnresolved; a clearly negative α stays refused.
	zero := synthetic(alpha, s, v, 0, budget, 0.002, 20000, 5)
	if _, _, err := FitCostModel(zero, DefaultCostFitConfig()); !errors.Is(err, ErrCostTerm) || !strings.Contains(err.Error(), "gamma:") {
		t.Errorf("γ = 0 by default: %v, want γ refused", err)
	}
	m, terms, err = FitCostModel(zero, CostFitConfig{MinR2: 0.5, ZeroUnresolved: true})
	if err != nil || m.Gamma != 0 || !terms[2].Accepted || !strings.Contains(terms[2].Reason, "written as 0") || math.Abs(m.Alpha-alpha) > 0.3 {
		t.Errorf("γ = 0 with ZeroUnresolved: %+v %+v %v", m, terms[2], err)
	}
	if _, _, err := FitCostModel(synthetic(-0.5, s, v, gamma, budget, 0.002, 20000, 2), CostFitConfig{MinR2: 0.5, ZeroUnresolved: true}); !errors.Is(err, ErrCostTerm) {
		t.Errorf("α = −0.5 with ZeroUnresolved: %v, want refused", err)
	}
	// No saturated interval: W refused.
	var pts []CostPoint
	for _, p := range synthetic(alpha, s, v, gamma, budget, 0, 0, 3) {
		p.Sat = nil
		pts = append(pts, p)
	}
	if _, _, err := FitCostModel(pts, DefaultCostFitConfig()); err == nil || !strings.Contains(err.Error(), "budget: no saturated interval") {
		t.Errorf("no saturated interval: error %v", err)
	}
	// One saturated report: no CI, W refused.
	pts = pts[:0]
	kept := false
	for _, p := range synthetic(alpha, s, v, gamma, budget, 0, 0, 3) {
		if len(p.Sat) > 0 {
			if kept {
				p.Sat = nil
			} else {
				p.Sat, kept = p.Sat[:1], true
			}
		}
		pts = append(pts, p)
	}
	if _, _, err := FitCostModel(pts, DefaultCostFitConfig()); !kept || err == nil || !strings.Contains(err.Error(), "budget: one saturated report") {
		t.Errorf("one saturated report: error %v", err)
	}
	bad := synthetic(alpha, s, v, gamma, budget, 0, 0, 4)
	bad[3].CPUUS = math.Inf(1)
	if _, _, err := FitCostModel(bad, DefaultCostFitConfig()); err == nil || errors.Is(err, ErrCostTerm) {
		t.Errorf("an infinite CPU time: error %v, want a bad-input error", err)
	}
	if _, _, err := FitCostModel(nil, CostFitConfig{MinR2: 2}); err == nil {
		t.Error("min R² 2 accepted")
	}
}

// TestCostLayouts: the layouts cut as named and the routing gives the
// rates the probe's design relies on.
func TestCostLayouts(t *testing.T) {
	chain := runtime.Chain("chain", 10, 0)
	ls := costLayouts(chain, 1000, runtime.Chain("syn", 10, 0), 100)
	var names []string
	for _, l := range ls {
		names = append(names, l.name)
	}
	if got := strings.Join(names, " "); got != "split-1 split-3 split-5 split-7 split-9 cut-3 cut-5 cut-9 dests-1 dests-2 dests-3 dests-1 dests-2 dests-3 budget" {
		t.Fatalf("layouts %s", got)
	}
	for _, l := range ls {
		if l.term == "budget" {
			continue
		}
		pts := nominalRates(l, nil)
		var local, remote float64
		for _, p := range pts {
			local += p.LocalRate
			remote += p.RemoteRate
		}
		if math.Abs(local+remote-9*l.rate) > 1e-6 {
			t.Errorf("%s: %v local + %v remote requests/s, want 9 per input", l.name, local, remote)
		}
		var want float64
		switch {
		case strings.HasPrefix(l.name, "split-"):
			want = 1000
		case strings.HasPrefix(l.name, "cut-"):
			want = float64(cutsOf(l.name)) * 1000
		default:
			want = l.rate
			if int(pts[0].Dests) != len(pts)-2 || pts[0].RemoteRate != l.rate {
				t.Errorf("%s at %g: sender %+v, want %d destinations and the input rate remote", l.name, l.rate, pts[0], len(pts)-2)
			}
			for _, p := range pts[1:] {
				if p.RemoteRate != 0 || p.Dests != 0 {
					t.Errorf("%s: receiver %+v sends remote", l.name, p)
				}
			}
		}
		if math.Abs(remote-want) > 1e-6 {
			t.Errorf("%s: %v remote requests/s, want %v", l.name, remote, want)
		}
	}
	split3 := nominalRates(ls[1], nil)
	if len(split3) != 3 || split3[0].LocalRate != 2000 || split3[1].LocalRate != 6000 || split3[0].Dests != 1 || split3[1].Dests != 0 ||
		split3[0].Reference || split3[1].Reference || !split3[2].Reference || split3[2].LocalRate+split3[2].RemoteRate+split3[2].Dests+split3[2].ExecUS != 0 {
		t.Errorf("split-3 %+v, want two workers and an idle reference", split3)
	}
}

func cutsOf(name string) int {
	var m int
	for _, c := range strings.TrimPrefix(name, "cut-") {
		m = 10*m + int(c-'0')
	}
	return m
}

// TestProcParsing: the parent PID of a stat line (a command with spaces
// and parentheses) and the -id flag of a command line.
func TestProcParsing(t *testing.T) {
	if got := parentOf([]byte("123 (a (b) c) S 77 123 123 0")); got != 77 {
		t.Errorf("parent %d, want 77", got)
	}
	for _, bad := range []string{"", "123 (x", "123 (x) S", "123 (x) S y"} {
		if got := parentOf([]byte(bad)); got != -1 {
			t.Errorf("parent of %q = %d, want -1", bad, got)
		}
	}
	if id, ok := workerID([]byte("bin\x00live-worker\x00-planner\x00a\x00-id\x003\x00-app\x00chain\x00")); !ok || id != 3 {
		t.Errorf("id %d %v, want 3", id, ok)
	}
	for _, bad := range []string{"bin\x00-id", "bin\x00-id\x00x", "bin\x00-id\x00-1", "bin"} {
		if _, ok := workerID([]byte(bad)); ok {
			t.Errorf("%q: an id", bad)
		}
	}
}

// TestPointsCountEachReportOnce: a report that stayed the latest over
// several control ticks (a late next report) is counted once, and the
// execution rate is the reports' mean weighted by their intervals; it used
// to be the mean over ticks, which weighted a report by how long the next
// one was late.
func TestPointsCountEachReportOnce(t *testing.T) {
	w0 := time.Unix(1000, 0)
	tw := func(execUS, reportS float64, repeated bool, cpuNS int64) tickWorker {
		// Saturated: a queue of 10 s of executions.
		return tickWorker{id: 0, exec: 1000, execUS: execUS, queue: 10_000, cpuNS: cpuNS, reportS: reportS, repeated: repeated}
	}
	r := &cpuRecorder{workers: 1, start: costTick{wall: w0, ws: []tickWorker{{id: 0, cpuNS: 0}}}}
	// A 1 s report at 60,000 µs/s seen at three ticks, then a 3 s report
	// at 20,000 µs/s.
	for i, w := range []tickWorker{tw(60_000, 1, false, 1e8), tw(60_000, 1, true, 1.5e8), tw(60_000, 1, true, 2e8), tw(20_000, 3, false, 2.4e8)} {
		r.ticks = append(r.ticks, costTick{now: float64(i + 1), wall: w0.Add(time.Duration(i+1) * time.Second), ws: []tickWorker{w}})
	}
	pts, err := r.points(costLayout{name: "budget", term: "budget", shares: [][]float64{{1}}}, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pts[0]
	if want := (60_000*1 + 20_000*3) / 4.0; math.Abs(p.ExecUS-want) > 1e-9 {
		t.Errorf("exec %v µs/s, want %v (over ticks it was %v)", p.ExecUS, want, (3*60_000+20_000)/4.0)
	}
	if p.Intervals != 2 || p.Saturated != 2 || len(p.Sat) != 2 {
		t.Errorf("%d reports, %d saturated, %d samples: want 2 of each", p.Intervals, p.Saturated, len(p.Sat))
	}
	if math.Abs(p.CPUUS-60_000) > 1e-6 {
		t.Errorf("CPU %v µs/s, want 60,000 (2.4e8 ns over 4 s)", p.CPUUS)
	}
}
