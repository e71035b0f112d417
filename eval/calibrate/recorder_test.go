package calibrate

import (
	"math"
	"strings"
	"testing"

	"streamscale/env"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
)

// TestRecorder: costs are Σ CPU / Σ executions after the skipped
// intervals, the CV is between intervals, and the actuation delay counts
// the intervals until the new quota is reported.
func TestRecorder(t *testing.T) {
	c := NewRecorder([]string{"a", "b"})
	tap := c.Tap(1, 5)
	rep := func(mc int, cpuA, thrA float64) []planner.TaskObs {
		return []planner.TaskObs{
			{Op: 0, Throughput: thrA, CPUCores: cpuA, LatencyMS: 2, Millicores: mc},
			{Op: 1, Throughput: 0, Millicores: mc},
		}
	}
	tap(0, rep(100, 1, 1)) // skipped: 1 s per event would dominate
	tap(1, rep(100, 0.002, 1000))
	tap(2, rep(100, 0.004, 1000))
	tap(3, rep(100, 0.006, 1000))
	tap(4, rep(5, 0.006, 1000))
	tap(5, rep(5, 9, 1)) // after the window: only the reported quota counts
	costs := c.Costs()
	if got := costs[0].CPUUSPerEvent; math.Abs(got-4.5) > 1e-9 {
		t.Errorf("cost %v µs, want 4.5", got)
	}
	// per-interval 2, 4, 6, 6 µs: mean 4.5, sample sd √(((2.5²+0.5²+1.5²+1.5²))/3)
	if want := math.Sqrt((6.25+0.25+2.25+2.25)/3) / 4.5; math.Abs(costs[0].CV-want) > 1e-9 {
		t.Errorf("CV %v, want %v", costs[0].CV, want)
	}
	if costs[1].CPUUSPerEvent != 0 || costs[1].Intervals != 0 || costs[0].DelayMS != 2 {
		t.Errorf("costs %+v", costs)
	}
	if got := c.ActuationIntervals(3, 5); got != 1 || len(c.Reported) != 6 {
		t.Errorf("actuation %d intervals, want 1", got)
	}
	if got := c.ActuationIntervals(0, 7); got != -1 {
		t.Errorf("actuation of a quota never reported: %d, want -1", got)
	}
	// Phase cost over intervals 4..5: (0.006 + 9) cores for 1001 events/s,
	// against 0.005 + 0.005 cores allotted.
	if us, q, n := c.PhaseCost(0, 4, 6); math.Abs(us-9.006/1001*1e6) > 1e-6 || math.Abs(q-9.006/0.01) > 1e-9 || n != 2 {
		t.Errorf("phase cost %v µs, quota used %v, %d intervals; want %v, %v, 2", us, q, n, 9.006/1001*1e6, 9.006/0.01)
	}
	if us, q, n := c.PhaseCost(1, 0, 6); us != 0 || q != 0 || n != 0 {
		t.Errorf("phase cost of an operator that never executed: %v %v %d, want zeros", us, q, n)
	}
	if _, _, n := c.PhaseCost(2, 0, 6); n != 0 {
		t.Error("phase cost of an unknown operator counted intervals")
	}
	s, err := NewStepController(2, 9000, 500, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for range 4 {
		a, _ := s.Act(env.Observation{})
		got = append(got, a.Targets[0])
	}
	if got[0] != 9000 || got[1] != 9000 || got[2] != 500 || got[3] != 500 {
		t.Errorf("step probe %v, want 9000 9000 500 500", got)
	}
	if _, err := NewStepController(0, 1, 1, 1); err == nil {
		t.Error("a probe of 0 tasks accepted")
	}
}

// TestServiceTimes: every operator of pred and etl executes and is timed,
// the fan-out shows in the counts, and the summary statistics are
// consistent.
func TestServiceTimes(t *testing.T) {
	for _, name := range []string{"pred", "etl"} {
		app, err := ops.AppByName(name)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := ServiceTimes(app, 1, 200)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.N+d.Outliers == 0 || !(d.MeanUS > 0) || d.P50US > d.P99US || d.CV < 0 {
				t.Errorf("%s: %+v", name, d)
			}
		}
		if name == "etl" && ds[1].N+ds[1].Outliers < 5*(ds[0].N+ds[0].Outliers) {
			t.Errorf("etl: SenMLParse's fan-out ×10 not seen: %d then %d executions", ds[0].N, ds[1].N)
		}
	}
	if _, err := ServiceTimes(ops.App{}, 1, 0); err == nil {
		t.Error("0 inputs accepted")
	}
}

func TestDistOf(t *testing.T) {
	d := distOf("x", []float64{1, 2, 3, 2, 1000})
	if d.Outliers != 1 || d.N != 4 || d.MeanUS != 2 || d.P50US != 2 || math.Abs(d.CV-math.Sqrt(2.0/3)/2) > 1e-12 {
		t.Errorf("%+v", d)
	}
}

// TestHopsAfter: the hop after each forwarding task is the execution-
// weighted delay at its successors that are tasks; the single source also
// carries its own input wait and the delays of operators the profile
// lacks (etl's Sink), so the hops along a path sum to the live delays
// along it; tasks without successors get none.
func TestHopsAfter(t *testing.T) {
	etl := ops.ETL()
	delays := map[string]float64{"SenMLParse": 11.9, "RangeFilter": 1.7, "BloomFilter": 0.8, "Interpolation": 0.7, "Join": 0.8,
		"Annotate": 21, "CsvToSenML": 13.5, "MQTTPublish": 8.7, "TableInsert": 13, "Sink": 5.9}
	execs := map[string]float64{"Annotate": 500, "CsvToSenML": 500, "TableInsert": 1500} // others 1000
	var costs []OperatorCost
	var tasks []string
	for _, s := range etl.Operators {
		e := 1000.0
		if x, ok := execs[s.Name]; ok {
			e = x
		}
		costs = append(costs, OperatorCost{Operator: s.Name, DelayMS: delays[s.Name], ExecsPerInterval: e})
		if s.Name != "Sink" {
			tasks = append(tasks, s.Name)
		}
	}
	got, err := HopsAfter(etl, costs, tasks)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"SenMLParse": 1.7 + 11.9 + 5.9, "RangeFilter": 0.8, "BloomFilter": 0.7, "Interpolation": 0.8, "Join": 21,
		"Annotate": (500*13.5 + 1500*13) / 2000, "CsvToSenML": 8.7,
	}
	if len(got) != len(want) {
		t.Fatalf("hops %+v, want %d entries", got, len(want))
	}
	for i, h := range got {
		if w, ok := want[h.Task]; !ok || math.Abs(h.MS-w) > 1e-9 {
			t.Errorf("hop after %s %v ms (from %v), want %v", h.Task, h.MS, h.From, w)
		}
		if i > 0 && h.Task == "SenMLParse" {
			t.Error("not in operator order")
		}
	}
	if f := got[0].From; len(f) != 3 || f[1] != "SenMLParse 11.90 (input)" || f[2] != "Sink 5.90 (not a task of the profile)" {
		t.Errorf("source hop from %q", f)
	}
	// An operator that never executed contributes nothing: with
	// RangeFilter idle SenMLParse has no measured successor and no entry
	// (HopMS applies there).
	costs[1].ExecsPerInterval = 0
	got, _ = HopsAfter(etl, costs, tasks)
	if len(got) != len(want)-1 || got[0].Task != "RangeFilter" || got[0].MS != 0.8 {
		t.Errorf("with RangeFilter idle: %+v", got)
	}
	// Costs that do not match the application are refused.
	if _, err := HopsAfter(etl, costs[:3], tasks); err == nil {
		t.Error("3 costs for etl accepted")
	}
	costs[2].Operator = "X"
	if _, err := HopsAfter(etl, costs, tasks); err == nil || !strings.Contains(err.Error(), `"X"`) {
		t.Errorf("a mismatched operator: %v", err)
	}
}

// TestRecorderEmptyShare: the share of measured intervals whose report
// showed an operator's queue empty (summed over workers), nil for an
// operator never reported; intervals outside [from, to) do not count.
func TestRecorderEmptyShare(t *testing.T) {
	c := NewRecorder([]string{"a", "b"})
	tap := c.Tap(1, 5)
	for i, qs := range [][2]float64{{7, 0}, {0, 0}, {0, 3}, {4, 0}, {0, 0}, {9, 9}} {
		// op a on two workers (their queues sum); op b never reported.
		tap(i, []planner.TaskObs{{Worker: 1, Op: 0, Queue: qs[0], Throughput: 10}, {Worker: 2, Op: 0, Queue: qs[1], Throughput: 10}})
	}
	costs := c.Costs()
	if e := costs[0].EmptyShare; e == nil || *e != 0.5 {
		t.Errorf("a: empty share %v, want 0.5 (intervals 1–4: empty, 3, 4, empty)", e)
	}
	if costs[1].EmptyShare != nil {
		t.Errorf("b: empty share %v, want none (never reported)", *costs[1].EmptyShare)
	}
}
