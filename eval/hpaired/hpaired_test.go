package hpaired

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"streamscale/eval/paired"
)

// twoSeeds is clasp and faasflow on seeds 1 and 2. The paired differences
// clasp − faasflow are, per seed: workers −1, −2; violation share 0, +10
// points; p95 −50%, +50%; delivered −2, −1 points.
func twoSeeds() []Run {
	return []Run{
		{Controller: "clasp", Seed: 1, MeanWorkers: 1, ViolationShare: 0.1, P95MS: 100, Delivered: 0.98},
		{Controller: "faasflow", Seed: 1, MeanWorkers: 2, ViolationShare: 0.1, P95MS: 200, Delivered: 1},
		{Controller: "clasp", Seed: 2, MeanWorkers: 2, ViolationShare: 0.2, P95MS: 300, Delivered: 0.99},
		{Controller: "faasflow", Seed: 2, MeanWorkers: 4, ViolationShare: 0.1, P95MS: 200, Delivered: 1},
	}
}

func near(a paired.Num, b float64) bool { return math.Abs(float64(a)-b) < 1e-9 }

// With two pairs d1, d2 a resample's mean is d1, (d1+d2)/2 or d2, the
// extremes each with probability 1/4, so the 95% percentile interval is
// exactly [min, max]: the answers below are computed by hand.
func TestAnalyzeTwoPairsByHand(t *testing.T) {
	s, err := Analyze(7, "syn", "burst", 1000, twoSeeds())
	if err != nil {
		t.Fatal(err)
	}
	if s.Candidate != "clasp" || !reflect.DeepEqual(s.Seeds, []uint64{1, 2}) || len(s.Comparisons) != 1 {
		t.Fatalf("summary %+v", s)
	}
	c := s.Comparisons[0]
	want := [][3]float64{{-1.5, -2, -1}, {5, 0, 10}, {0, -50, 50}, {-1.5, -2, -1}}
	for i, e := range c.Estimates {
		if !near(e.Mean, want[i][0]) || !near(e.CILow, want[i][1]) || !near(e.CIHigh, want[i][2]) {
			t.Errorf("%s: %v [%v, %v], want %v", e.Metric, e.Mean, e.CILow, e.CIHigh, want[i])
		}
	}
	holds := map[string]bool{}
	for _, v := range c.Verdicts {
		holds[v.Name] = v.Holds
	}
	// Fewer workers (CI [−2, −1]) with the violation CI [0, 10] not above
	// 0; violations not fewer; p95 CI straddles 0; delivered CI [−2, −1]
	// above −5.
	// The violation CI's upper bound 10 is not below +5: not "no more".
	if want := map[string]bool{VerdictWorkers: true, VerdictViolations: false, VerdictNoMore: false, VerdictP95: false, VerdictDelivered: true}; !reflect.DeepEqual(holds, want) {
		t.Fatalf("verdicts %v, want %v", holds, want)
	}

	// The other way round every sign flips: faasflow uses more workers
	// (CI [1, 2]), its violation CI is [−10, 0] (not entirely below 0).
	r := twoSeeds()
	r[0], r[1], r[2], r[3] = r[1], r[0], r[3], r[2]
	s, err = Analyze(7, "syn", "burst", 1000, r)
	if err != nil {
		t.Fatal(err)
	}
	c = s.Comparisons[0]
	// The violation CI [−10, 0]: not fewer, but no more (0 < +5).
	if !near(c.Estimates[0].CILow, 1) || !near(c.Estimates[0].CIHigh, 2) || c.Verdicts[0].Holds || c.Verdicts[1].Holds || !c.Verdicts[2].Holds || !c.Verdicts[4].Holds {
		t.Fatalf("reversed: %+v", c)
	}
	// A loss of 10 and 2 points of delivered share is not non-inferior at
	// the 5-point margin.
	r = twoSeeds()
	r[0].Delivered, r[2].Delivered = 0.9, 0.98
	s, _ = Analyze(7, "syn", "burst", 1000, r)
	if d := s.Comparisons[0].Verdicts[4]; d.Holds || !near(d.Evidence[0].CILow, -10) {
		t.Fatalf("delivered −10/−2: %+v", d)
	}
	// Violations fewer: −10 and −20 points.
	r = twoSeeds()
	r[1].ViolationShare, r[3].ViolationShare = 0.2, 0.4
	s, _ = Analyze(7, "syn", "burst", 1000, r)
	if v := s.Comparisons[0].Verdicts[1]; !v.Holds || !near(v.Evidence[0].CIHigh, -10) || !s.Comparisons[0].Verdicts[2].Holds {
		t.Fatalf("violations −10/−20: %+v", s.Comparisons[0].Verdicts)
	}
	// Violations +4 and +6 points: CI [4, 6], its upper bound above +5.
	r = twoSeeds()
	r[0].ViolationShare, r[2].ViolationShare = 0.14, 0.16
	s, _ = Analyze(7, "syn", "burst", 1000, r)
	if v := s.Comparisons[0].Verdicts[2]; v.Holds || !near(v.Evidence[0].CIHigh, 6) || s.Comparisons[0].Verdicts[0].Holds {
		t.Fatalf("violations +4/+6: %+v", s.Comparisons[0].Verdicts)
	}
	if md := Markdown(s); !strings.Contains(md, "| faasflow | 2 | -1.50 [-2.00, -1.00] |") || !strings.Contains(md, "fewer_workers: mean-workers") {
		t.Fatalf("markdown:\n%s", md)
	}
}

// TestAnalyzeOnePairNoVerdict: one seed gives the differences but no
// interval and no verdict; a zero baseline p95 leaves that difference
// undefined.
func TestAnalyzeOnePairNoVerdict(t *testing.T) {
	r := twoSeeds()[:2]
	r[1].P95MS = 0
	s, err := Analyze(7, "syn", "burst", 1000, r)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Comparisons[0]
	if c.Pairs != 1 || !near(c.Estimates[0].Mean, -1) || !math.IsNaN(float64(c.Estimates[0].CILow)) || !math.IsNaN(float64(c.Estimates[2].Mean)) {
		t.Fatalf("one pair: %+v", c.Estimates)
	}
	for _, v := range c.Verdicts {
		if v.Holds {
			t.Errorf("%s holds on one pair", v.Name)
		}
	}
	if md := Markdown(s); !strings.Contains(md, "no verdict (run with -seeds ≥ 2)") || !strings.Contains(md, "| -1.00 |") {
		t.Fatalf("markdown:\n%s", md)
	}
}

// TestAnalyzeDeterministicAndStreams: same inputs, same summary; another
// root seed resamples differently (twelve pairs, so the interval is not
// the range).
func TestAnalyzeDeterministicAndStreams(t *testing.T) {
	var r []Run
	for k := range 12 {
		sd := uint64(k + 1)
		r = append(r, Run{Controller: "clasp", Seed: sd, MeanWorkers: math.Sin(float64(k)) * 3, P95MS: 100, Delivered: 1},
			Run{Controller: "zhang24", Seed: sd, MeanWorkers: float64(k*k) / 2, P95MS: 100 + float64(k), Delivered: 1},
			Run{Controller: "fixed:2", Seed: sd, MeanWorkers: 2, P95MS: 90, Delivered: 1})
	}
	a, err := Analyze(1, "wc", "gradual", 1000, r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Analyze(1, "wc", "gradual", 1000, r)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same inputs, different summaries")
	}
	if len(a.Comparisons) != 2 || a.Comparisons[0].Baseline != "zhang24" || a.Comparisons[1].Baseline != "fixed:2" {
		t.Fatalf("comparisons %+v", a.Comparisons)
	}
	c, _ := Analyze(2, "wc", "gradual", 1000, r)
	if reflect.DeepEqual(a.Comparisons[0].Estimates[0], c.Comparisons[0].Estimates[0]) {
		t.Fatal("another root seed gave the same interval")
	}
}

// TestAnalyzeRefusesLayouts: runs not seed-major with one controller order
// are refused with an error naming the run.
func TestAnalyzeRefusesLayouts(t *testing.T) {
	r := twoSeeds()
	swapped := []Run{r[0], r[1], r[3], r[2]}
	dup := []Run{r[0], r[1], r[2], r[3], r[0], r[1]}
	twice := []Run{r[0], r[0]}
	for name, c := range map[string]struct {
		runs []Run
		want string
	}{
		"empty":  {nil, "no runs"},
		"ragged": {r[:3], "3 runs for 2"},
		"order":  {swapped, "run 2 is faasflow on seed 2, want clasp"},
		"seed":   {dup, "seed 1 appears twice"},
		"twice":  {twice, "runs twice"},
	} {
		if _, err := Analyze(1, "syn", "burst", 1000, c.runs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
