package harness

import (
	"math"
	"testing"

	"streamscale/clasp"
)

// TestEquationOneAtTheBottleneck: an overloaded cluster's bottleneck reports
// metrics that satisfy Eq. 1 with equality under the true model, the others
// stay within W, and the backlog is what was not served.
func TestEquationOneAtTheBottleneck(t *testing.T) {
	truth := clasp.CostModel{Alpha: 40, Beta: 300, Gamma: 50000, Budget: 800000}
	c, err := New(clasp.AA(), truth, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Apply(clasp.Plan{Parallelism: []int{1, 1, 1, 1, 1}, Workers: []clasp.WorkerPlan{
		{ID: 0, Share: []float64{1, 1, 0, 0, 0}},
		{ID: 4, Share: []float64{0, 0, 1, 1, 1}},
	}})
	ob := c.Step(3000)
	if err := ob.Validate(); err != nil {
		t.Fatal(err)
	}
	work := func(w clasp.WorkerObs) float64 {
		x := truth.Alpha*w.LocalRate + truth.Beta*w.RemoteRate + truth.Gamma*w.RemoteDests
		for o := range w.Exec {
			x += w.Exec[o] * w.ExecUS[o]
		}
		return x
	}
	st := c.Last()
	if st.Fraction >= 1 {
		t.Fatalf("fraction %v: the example is not overloaded", st.Fraction)
	}
	saturated := 0
	for _, w := range ob.Workers {
		x := work(w)
		if x > truth.Budget*(1+1e-12) {
			t.Errorf("worker %d works %.1f > W", w.ID, x)
		}
		if w.Queue > 0 {
			saturated++
			if math.Abs(x-truth.Budget) > 1e-6*truth.Budget {
				t.Errorf("queued worker %d works %.1f, want W = %.0f", w.ID, x, truth.Budget)
			}
		}
	}
	if saturated == 0 {
		t.Error("no worker queues")
	}
	if math.Abs(ob.Throughput+ob.PlannerQueue-3000) > 1e-6 {
		t.Errorf("throughput %v + backlog %v ≠ 3000", ob.Throughput, ob.PlannerQueue)
	}
	// Same seed and noise: the same observations.
	a, _ := New(clasp.AA(), truth, 9, 0.05)
	b, _ := New(clasp.AA(), truth, 9, 0.05)
	for _, x := range []*Cluster{a, b} {
		x.Apply(clasp.Plan{Parallelism: []int{1, 1, 1, 1, 1}, Workers: []clasp.WorkerPlan{{ID: 0, Share: []float64{1, 1, 1, 1, 1}}}})
	}
	oa, ob2 := a.Step(1000), b.Step(1000)
	if oa.Workers[0].ExecUS[0] != ob2.Workers[0].ExecUS[0] || oa.Workers[0].ExecUS[0] == clasp.AA().Operators[0].ExecUS {
		t.Errorf("noise: %v vs %v", oa.Workers[0].ExecUS[0], ob2.Workers[0].ExecUS[0])
	}
}
