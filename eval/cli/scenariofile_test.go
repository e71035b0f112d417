package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/env"
	"streamscale/eval/live"
	"streamscale/eval/runner"
	rtops "streamscale/serve/runtime/ops"
)

// TestRunScenarioFile: `eval run -scenario FILE` with only the base is
// the preset run byte for byte (same trajectory hash); measured demands
// change the run; a bad file is a usage error naming the field.
func TestRunScenarioFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeTemp(t, dir, name, body) }
	hash := func(scenario string) string {
		code, out, errs := call(t, "run", "-profile", "pred", "-trace", testTrace, "-controller", "static:700", "-steps", "30", "-scenario", scenario, "-json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", scenario, code, errs)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		return m["trajectory_sha256"].(string)
	}
	base := write("base.json", `{"version":1,"base":"realistic"}`)
	if hash(base) != hash("realistic") {
		t.Error("a base-only file ran differently from the preset")
	}
	slow := write("slow.json", `{"version":1,"base":"realistic","demand":{"profile":"pred","cpu_scale":0.01,"tasks":[{"task":"SenMLParse","cpu_us_per_event":9}]}}`)
	if hash(slow) == hash("realistic") {
		t.Error("a measured demand did not change the run")
	}
	for file, want := range map[string]string{
		write("neg.json", `{"version":1,"base":"paper","physics":{"service_cv":-1}}`):                                                             "service_cv -1",
		write("etl.json", `{"version":1,"base":"paper","demand":{"profile":"etl","cpu_scale":1,"tasks":[{"task":"Join","cpu_us_per_event":1}]}}`): "demand is for profile etl, not pred",
		write("hop.json", `{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":1}}}`):                                                 `task "Join" is not a task of pred`,
	} {
		code, _, errs := call(t, "run", "-profile", "pred", "-trace", testTrace, "-steps", "5", "-scenario", file)
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", file, code, errs, want)
		}
	}
}

// TestCalibratedScenario: the scenario `eval calibrate` writes parses
// back, carries the measured values and a note for each, and drops a
// cost model the probe could not estimate.
func TestCalibratedScenario(t *testing.T) {
	sc, err := runner.Config(runner.Spec{Profile: "pred", Workload: constantRates{2000, 5}, PlacementSeed: 101})
	if err != nil {
		t.Fatal(err)
	}
	var ops []live.OperatorCost
	var svc []live.ServiceDist
	var names []string
	for k, task := range sc.App.Tasks {
		ops = append(ops, live.OperatorCost{Operator: task.Name, CPUUSPerEvent: 1.5, CV: 0.2, Intervals: 10, ExecsPerInterval: 500, DelayMS: float64(k + 1)})
		svc = append(svc, live.ServiceDist{Operator: task.Name, N: 100, MeanUS: 1.2, CV: 0.8})
		names = append(names, task.Name)
	}
	c := Calibration{Profile: "pred", Rate: 2000, TimeScaleS: 0.25, Intervals: 40, CPUScale: 0.01, HighMC: 10000, LowMC: 500,
		Operators: ops, ServiceTimes: svc, ActuationIntervals: 1, CFSPeriodMS: 100, Enforcement: 0.97, EnforcementIntervals: 19,
		CostModel: &live.CostEstimate{Samples: []int{3, 0, 0}}}
	c.CostModel.Model.Alpha, c.CostModel.Model.Beta, c.CostModel.Smoothed = 10, -5, 1e6
	c.ServiceCV, c.CapacityJitter = serviceCV(svc, ops)
	c.Methods = calibrationMethods(c)
	if c.HopsAfter, err = live.HopsAfter(rtops.PRED(), ops, names); err != nil {
		t.Fatal(err)
	}
	s, err := calibratedScenario(c, sc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.ParseScenario(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	p := got.Physics
	if p.ServiceCV != 0.8 || p.ActuationDelaySteps != 1 || p.CFSPeriodMS != 100 || p.Arrivals != env.ArrivalsUniform || p.MetricNoise != 0 {
		t.Errorf("physics %+v", p)
	}
	// eval live observes the interval just ended: no metric lag, whatever
	// the realistic preset's.
	if base, err := env.ScenarioPhysics(env.ScenarioRealistic); err != nil || base.MetricLagSteps == 0 {
		t.Fatalf("the realistic preset's metric lag %d (%v): this check needs one", base.MetricLagSteps, err)
	}
	if p.MetricLagSteps != 0 || got.Notes["metric_lag_steps"] == "" {
		t.Errorf("metric lag %d, note %q; want 0 and a note", p.MetricLagSteps, got.Notes["metric_lag_steps"])
	}
	// Interval CV 0.2 less the per-event share 0.8²/500: √(0.04 − 0.00128), rounded.
	if want := 0.197; p.CapacityJitter != want {
		t.Errorf("capacity jitter %v, want %v", p.CapacityJitter, want)
	}
	if got.Demand == nil || len(got.Demand.Tasks) != len(sc.App.Tasks) || got.Demand.Tasks[0].CPUUSPerEvent != 1.5 || got.Demand.CPUScale != 0.01 {
		t.Errorf("demand %+v", got.Demand)
	}
	if got.CostModel != nil || !strings.Contains(got.Notes["cost_model"], "not written") {
		t.Errorf("a negative β was written as a cost model: %+v, note %q", got.CostModel, got.Notes["cost_model"])
	}
	// pred: SenMLParse (delay 1) → DecisionTreeClassify (2),
	// LinearRegression (3), BlockWindowAverage (4); LR, BWA →
	// ErrorEstimate (5); DTC, EE → MQTTPublish (6). Equal executions.
	want := map[string]float64{"SenMLParse": 3 + 1, "DecisionTreeClassify": 6, "LinearRegression": 5, "BlockWindowAverage": 5, "ErrorEstimate": 6}
	e := p.HopMSByTask.Entries()
	if len(e) != len(want) {
		t.Errorf("hop_ms_by_task %v, want %v", e, want)
	}
	for _, h := range e {
		if want[h.Task] != h.MS {
			t.Errorf("hop after %s %v ms, want %v", h.Task, h.MS, want[h.Task])
		}
	}
	for _, k := range []string{"service_cv", "capacity_jitter", "cfs_period_ms", "actuation_delay_steps", "demand", "arrivals", "hop_ms_by_task"} {
		if got.Notes[k] == "" {
			t.Errorf("no note for %s", k)
		}
	}
}

type constantRates [2]float64

func (c constantRates) Len() int         { return int(c[1]) }
func (c constantRates) Rate(int) float64 { return c[0] }

// TestCalibrateFrom: `eval calibrate -from` recomputes a recorded probe's
// derived values (testdata: an etl probe of 2026-12-01 recorded before
// the per-task hops existed) and writes a scenario whose hops along every
// source-to-sink path sum to the live delays along it (plus the Sink's);
// a bad file is a usage error naming what is wrong, and writes nothing.
func TestCalibrateFrom(t *testing.T) {
	src := filepath.Join("testdata", "calibration-etl.json")
	out, s, rec, c, fit := calibrateFrom(t, src)
	if !strings.Contains(out, "hop after it ms") || !strings.Contains(out, "| hop_spread | simulated p95 ms |") || !strings.Contains(out, "Derived values recomputed from "+src) {
		t.Errorf("calibration.md:\n%s", out)
	}
	delay := map[string]float64{}
	for _, oc := range c.Operators {
		delay[oc.Operator] = oc.DelayMS
	}
	hop := map[string]float64{}
	for _, h := range s.Physics.HopMSByTask.Entries() {
		hop[h.Task] = h.MS
	}
	for _, path := range [][]string{
		{"SenMLParse", "RangeFilter", "BloomFilter", "Interpolation", "Join", "Annotate", "CsvToSenML", "MQTTPublish"},
		{"SenMLParse", "RangeFilter", "BloomFilter", "Interpolation", "Join", "Annotate", "TableInsert"},
	} {
		var hops, live float64
		for i, task := range path {
			live += delay[task]
			if i < len(path)-1 {
				hops += hop[task]
			}
		}
		live += delay["Sink"]
		// Annotate's hop is the mean over its two branches.
		tol := 0.01 + math.Abs(delay["CsvToSenML"]-delay["TableInsert"])/2
		if math.Abs(hops-live) > tol {
			t.Errorf("path to %s: hops sum to %.3f ms, live delays to %.3f", path[len(path)-1], hops, live)
		}
	}
	if s.Notes["hop_ms_by_task"] == "" || len(hop) != 7 {
		t.Errorf("hops %v, note %q", hop, s.Notes["hop_ms_by_task"])
	}
	// The hops are end to end (no propagation on top) and spread by the
	// fit to the probe's p95: the simulated p95 grows along the grid and
	// the spread written is the grid point nearest the live p95.
	if !s.Physics.HopsEndToEnd || s.Notes["hops_end_to_end"] == "" || s.Notes["hop_spread"] == "" {
		t.Errorf("hops_end_to_end %v, notes %q / %q", s.Physics.HopsEndToEnd, s.Notes["hops_end_to_end"], s.Notes["hop_spread"])
	}
	pts := fit.HopSpreadFit
	if len(pts) != 2*hopSpreadGrid+1 || s.Physics.HopSpread != fit.HopSpread {
		t.Fatalf("fit %+v, scenario hop_spread %v, calibration %v", pts, s.Physics.HopSpread, fit.HopSpread)
	}
	// Up to spread 1 (uniform hops, one draw each) the p95 grows at every
	// step; above it a step moves some hops from the uniform to the
	// exponential component, so the sampled p95 may dip by a little
	// while it grows over the range.
	if !(pts[2*hopSpreadGrid].P95MS > pts[hopSpreadGrid].P95MS) {
		t.Errorf("simulated p95 %v at spread 2, %v at 1: want exponential hops to raise it", pts[2*hopSpreadGrid].P95MS, pts[hopSpreadGrid].P95MS)
	}
	best := pts[0]
	for i, p := range pts {
		if i > 0 && i <= hopSpreadGrid && !(p.P95MS > pts[i-1].P95MS) || i > hopSpreadGrid && p.P95MS < 0.99*pts[i-1].P95MS {
			t.Errorf("simulated p95 %v at spread %v after %v at %v: want it growing", p.P95MS, p.Spread, pts[i-1].P95MS, pts[i-1].Spread)
		}
		if math.Abs(p.P95MS-c.P95HighMS) < math.Abs(best.P95MS-c.P95HighMS) {
			best = p
		}
	}
	t.Logf("live p95 %.1f ms; fitted hop_spread %v (%s)", c.P95HighMS, fit.HopSpread, fit.HopSpreadNote)
	if fit.HopSpread != best.Spread {
		t.Errorf("hop_spread %v, want the nearest point %+v", fit.HopSpread, best)
	}
	refuseEdits(t, rec, map[string]func(string) string{
		`unknown field "x"`:        func(j string) string { return strings.Replace(j, `"profile"`, `"x": 1, "profile"`, 1) },
		`profile "wc"`:             func(j string) string { return strings.Replace(j, `"profile": "etl"`, `"profile": "wc"`, 1) },
		`operators[0] "Parse"`:     func(j string) string { return strings.Replace(j, `"operator": "SenMLParse"`, `"operator": "Parse"`, 1) },
		"operator SenMLParse":      func(j string) string { return strings.Replace(j, `"delay_ms": 11.`, `"delay_ms": -11.`, 1) },
		"data after":               func(j string) string { return j + "{}" },
		"intervals 2, want 8..1e6": func(j string) string { return strings.Replace(j, `"intervals": 40`, `"intervals": 2`, 1) },
		"high_millicores 0": func(j string) string {
			return strings.Replace(j, `"high_millicores": 10000`, `"high_millicores": 0`, 1)
		},
	})
}

// refuseEdits checks that each edit of the recorded calibration.json rec
// makes `eval calibrate -from` a usage error whose message contains the
// edit's name, and writes nothing.
func refuseEdits(t *testing.T, rec []byte, edits map[string]func(string) string) {
	t.Helper()
	for name, edit := range edits {
		bad := filepath.Join(t.TempDir(), "calibration.json")
		if err := os.WriteFile(bad, []byte(edit(string(rec))), 0o644); err != nil {
			t.Fatal(err)
		}
		o := filepath.Join(t.TempDir(), "out")
		code, _, errs := call(t, "calibrate", "-from", bad, "-out", o)
		if _, err := os.Stat(o); code != 2 || !strings.Contains(errs, name) || err == nil {
			t.Errorf("%s: exit %d, stderr %q, out dir %v; want 2, the error named and nothing written", name, code, errs, err)
		}
	}
}

// calibrateFrom runs `eval calibrate -from src` and returns what it
// printed (calibration.md), the scenario it wrote, the recorded file and
// its parse, and the calibration.json it wrote.
func calibrateFrom(t *testing.T, src string) (string, env.Scenario, []byte, Calibration, Calibration) {
	t.Helper()
	dir := t.TempDir()
	code, out, errs := call(t, "calibrate", "-from", src, "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "scenario.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := env.ParseScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCalibration(rec)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.ReadFile(filepath.Join(dir, "calibration.json"))
	if err != nil {
		t.Fatal(err)
	}
	fit, err := parseCalibration(fb)
	if err != nil {
		t.Fatal(err)
	}
	return out, s, rec, c, fit
}

// TestCalibrateFromCurve: a probe with -hop-rates (testdata: etl on
// 2026-12-02 at 3,000 inputs/s and 300…4,000 more) gives a scenario whose
// hop curve has a point per rate, in increasing rate, each carrying that
// rate's measured delays: the hop after Join is Annotate's delay, every
// task's wait its own delay; each point's spread is the nearest of its
// own fit; a bad curve in the file is a usage error naming the point.
func TestCalibrateFromCurve(t *testing.T) {
	out, s, rec, c, fit := calibrateFrom(t, filepath.Join("testdata", "calibration-etl-curve.json"))
	if !strings.Contains(out, "| operator | 300/s | 600/s | 1000/s | 1700/s | 2400/s | 3000/s | 4000/s |") {
		t.Errorf("calibration.md has no curve table:\n%s", out)
	}
	byRate := map[float64][]live.OperatorCost{c.Rate: c.Operators}
	spreadOf := map[float64]float64{fit.Rate: fit.HopSpread}
	for _, p := range fit.HopCurve {
		byRate[p.Rate] = p.Operators
		spreadOf[p.Rate] = p.HopSpread
		best := p.HopSpreadFit[0]
		for _, q := range p.HopSpreadFit {
			if math.Abs(q.P95MS-p.P95MS) < math.Abs(best.P95MS-p.P95MS) {
				best = q
			}
		}
		if p.HopSpread != best.Spread {
			t.Errorf("rate %v: spread %v, want the nearest fit %+v to the live %v ms", p.Rate, p.HopSpread, best, p.P95MS)
		}
	}
	pts := s.Physics.HopCurve.Points()
	if len(pts) != 7 {
		t.Fatalf("%d curve points, want 7", len(pts))
	}
	for i, p := range pts {
		if i > 0 && !(p.Rate > pts[i-1].Rate) {
			t.Errorf("point %d: rate %v after %v", i, p.Rate, pts[i-1].Rate)
		}
		delay := map[string]float64{}
		for _, oc := range byRate[p.Rate] {
			delay[oc.Operator] = round3(oc.DelayMS)
		}
		waits := map[string]float64{}
		for _, e := range p.Waits.Entries() {
			waits[e.Task] = e.MS
			if e.MS != delay[e.Task] {
				t.Errorf("rate %v: wait at %s %v ms, measured delay %v", p.Rate, e.Task, e.MS, delay[e.Task])
			}
		}
		if len(waits) != 9 || waits["Sink"] != 0 {
			t.Errorf("rate %v: waits %v, want the profile's 9 tasks (not the Sink)", p.Rate, waits)
		}
		for _, e := range p.Hops.Entries() {
			if e.Task == "Join" && e.MS != delay["Annotate"] {
				t.Errorf("rate %v: hop after Join %v ms, Annotate's delay %v", p.Rate, e.MS, delay["Annotate"])
			}
		}
		if p.Spread != spreadOf[p.Rate] || !(p.Spread >= 0 && p.Spread <= 2) {
			t.Errorf("rate %v: spread %v, fitted %v", p.Rate, p.Spread, spreadOf[p.Rate])
		}
		if p.Empty.Len() != 0 {
			t.Errorf("rate %v: queue_empty_by_task %v from a file that measured none", p.Rate, p.Empty)
		}
	}
	refuseEdits(t, rec, map[string]func(string) string{
		"hop_curve[0]: rate 3000": func(j string) string { return strings.Replace(j, `"rate": 300,`, `"rate": 3000,`, 1) },
		"hop_curve[1]: rate 200":  func(j string) string { return strings.Replace(j, `"rate": 600,`, `"rate": 200,`, 1) },
		"hop_curve[0] operators[0]": func(j string) string {
			i := strings.Index(j, `"hop_curve"`)
			return j[:i] + strings.Replace(j[i:], `"operator": "SenMLParse"`, `"operator": "Parse"`, 1)
		},
	})
}

// TestCalibrateFromCurveEmpty: with the operators' empty shares measured
// at every rate, the curve lists them for every waiting task (rounded to
// 0.001), and a task one rate did not measure is left out; a share
// outside [0, 1] is refused.
func TestCalibrateFromCurveEmpty(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "calibration-etl-curve.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	share := func(rate float64, j int) float64 { return math.Round(1000*(0.1+float64(j)/20+rate/1e5)) / 1000 }
	set := func(ops []any, rate float64, skip string) {
		for j, o := range ops {
			m := o.(map[string]any)
			if m["operator"] != skip {
				m["empty_share"] = share(rate, j)
			}
		}
	}
	set(raw["operators"].([]any), raw["rate"].(float64), "")
	for i, p := range raw["hop_curve"].([]any) {
		pm := p.(map[string]any)
		skip := ""
		if i == 2 {
			skip = "Join" // one rate did not measure Join
		}
		set(pm["operators"].([]any), pm["rate"].(float64), skip)
	}
	src := filepath.Join(t.TempDir(), "calibration.json")
	nb, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, nb, 0o644); err != nil {
		t.Fatal(err)
	}
	_, s, _, c, _ := calibrateFrom(t, src)
	names := map[string]int{}
	for j, oc := range c.Operators {
		names[oc.Operator] = j
	}
	for _, p := range s.Physics.HopCurve.Points() {
		got := map[string]float64{}
		for _, e := range p.Empty.Entries() {
			got[e.Task] = e.MS
		}
		if _, ok := got["Join"]; ok || len(got) != 8 {
			t.Errorf("rate %v: empty shares %v, want the 8 waiting tasks but Join", p.Rate, got)
		}
		for task, v := range got {
			if want := round3(share(p.Rate, names[task])); v != want {
				t.Errorf("rate %v: %s empty %v, want %v", p.Rate, task, v, want)
			}
		}
	}
	bad := strings.Replace(string(nb), `"empty_share":0.1`, `"empty_share":1.5`, 1)
	if _, err := parseCalibration([]byte(bad)); err == nil || !strings.Contains(err.Error(), "empty_share 1.5") {
		t.Errorf("a share of 1.5: %v", err)
	}
}

// FuzzParseCalibration: no calibration.json panics the parser or the
// derivation of what it accepts.
func FuzzParseCalibration(f *testing.F) {
	rec, err := os.ReadFile(filepath.Join("testdata", "calibration-etl.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	if curve, err := os.ReadFile(filepath.Join("testdata", "calibration-etl-curve.json")); err == nil {
		f.Add(curve)
	}
	f.Add([]byte(`{"profile":"pred"}`))
	f.Add([]byte(`{"profile":"etl","rate":1,"time_scale_s":1,"cpu_scale":1,"intervals":8,"operators":[]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"profile":"pred","rate":1,"time_scale_s":1,"cpu_scale":1,"intervals":8,"high_millicores":10000,"low_millicores":500,"p95_high_ms":1e7,"hop_spread":2,"hop_spread_fit":[{"spread":0,"p95_ms":-1}],"hop_spread_note":"x","operators":[]}`))
	scs := map[string]env.Config{}
	for _, p := range []string{"pred", "etl"} {
		sc, err := runner.Config(runner.Spec{Profile: p, Workload: constantRates{2000, 8}, PlacementSeed: 101})
		if err != nil {
			f.Fatal(err)
		}
		scs[p] = sc
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseCalibration(data)
		if err != nil {
			return
		}
		app, err := rtops.AppByName(c.Profile)
		if err != nil {
			t.Fatalf("accepted profile %q: %v", c.Profile, err)
		}
		var names []string
		for _, task := range scs[c.Profile].App.Tasks {
			names = append(names, task.Name)
		}
		if c.HopsAfter, err = live.HopsAfter(app, c.Operators, names); err != nil {
			t.Fatalf("accepted but HopsAfter: %v", err)
		}
		c.Methods = calibrationMethods(c)
		calibrationMarkdown(c)
		if s, err := calibratedScenario(c, scs[c.Profile]); err == nil {
			if _, err := s.MarshalFile(); err != nil {
				t.Logf("scenario not written: %v", err)
			}
		}
	})
}

// writeTemp writes body to dir/name and returns the path.
func writeTemp(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
