package claspexp

import (
	"math"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/stat"

	"streamscale/clasp"
)

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {1, 5}, {0.25, 2}, {0.95, 4.8}} {
		if got := quantile(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("q%.2f = %v, want %v", tc.q, got, tc.want)
		}
	}
	if xs[0] != 5 {
		t.Error("quantile sorted its input")
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("empty quantile not 0")
	}
}

// TestQuantileIsNotGonums records why quantile is not gonum's
// stat.Quantile: neither cumulant kind gives the R-7 interpolation the
// published figures use (LinInterp interpolates the empirical CDF, R-4;
// Empirical is the nearest rank), so the switch would move them.
func TestQuantileIsNotGonums(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	if got := quantile(xs, 0.5); got != 2.5 {
		t.Fatalf("R-7 median of %v = %v, want 2.5", xs, got)
	}
	for _, c := range []stat.CumulantKind{stat.LinInterp, stat.Empirical} {
		if g := stat.Quantile(0.5, c, xs, nil); g == 2.5 {
			t.Errorf("gonum's kind %v gives R-7's median %v: quantile could be stat.Quantile", c, g)
		}
	}
}

func TestMethodsNames(t *testing.T) {
	var names []string
	for _, m := range Methods(10) {
		p, err := m.New()
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if p.Name() != m.Name {
			t.Errorf("method %s builds planner %s", m.Name, p.Name())
		}
		names = append(names, m.Name)
	}
	want := []string{"clasp", "faasflow", "zhang24", "ds2", "faasflow-sp", "zhang24-sp", "hpa", "clasp-paper", "clasp-h90"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("methods %v, want %v", names, want)
	}
}

// TestWorkerTransitionsSmall runs two transitions of WC on 3 workers for
// CLASP: rows in order, OOWC from the sustained rates, and CLASP holds the
// workers the target needs within one.
func TestWorkerTransitionsSmall(t *testing.T) {
	app := clasp.WC()
	maxRate := make([]float64, 3)
	for n := 1; n <= 3; n++ {
		r, err := PredictedRate(app, n)
		if err != nil {
			t.Fatal(err)
		}
		maxRate[n-1] = r
	}
	rows, err := WorkerTransitions(app, maxRate, pick(Methods(3), "clasp"), TransitionOptions{Fractions: []float64{0.3, 0.9}, Warm: 8, After: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].From >= rows[0].To || rows[1].From <= rows[1].To {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Needed < 1 || r.Needed > 3 || r.Workers < 1 || r.Workers > 3 {
			t.Errorf("%+v out of range", r)
		}
		if d := r.Workers - r.Needed; d < -1 || d > 1 {
			t.Errorf("%.0f→%.0f: CLASP holds %d workers, the target needs %d", r.From, r.To, r.Workers, r.Needed)
		}
	}
	if _, err := WorkerTransitions(app, maxRate, pick(Methods(3), "clasp"), TransitionOptions{Fractions: []float64{0.5}, Warm: 1, After: 1}); err == nil {
		t.Error("one fraction: no error")
	}
}

// TestModesSmall runs CLASP and HPA through both load modes on 4 workers:
// every step recorded, totals consistent, and a second run identical.
func TestModesSmall(t *testing.T) {
	app := clasp.WC()
	top, err := PredictedRate(app, 4)
	if err != nil {
		t.Fatal(err)
	}
	ms := pick(Methods(4), "clasp", "hpa")
	rows, err := Modes(app, top, 4, ms, []uint64{1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].Mode != "burst" || rows[2].Mode != "gradual" || rows[1].Method != "hpa" {
		t.Fatalf("rows %v", rows)
	}
	for _, r := range rows {
		if len(r.Workers) != len(ModeTraces(top, 1)[r.Mode]) || r.MaxWorkers > 4 || r.MaxWorkers < 1 {
			t.Errorf("%s/%s: %d steps, max %d workers", r.Mode, r.Method, len(r.Workers), r.MaxWorkers)
		}
		if r.Delivered > r.Offered*(1+1e-9) || r.ThroughputRatio <= 0 {
			t.Errorf("%s/%s: delivered %v of %v", r.Mode, r.Method, r.Delivered, r.Offered)
		}
	}
	if rows[0].Plans < 2 {
		t.Errorf("CLASP applied %d plans over a burst", rows[0].Plans)
	}
	if rows[0].WarmSteps < 1 || rows[0].MedianMS <= 0 || rows[0].P95MS < rows[0].MedianMS {
		t.Errorf("warm-up %d steps, pooled median %v, p95 %v", rows[0].WarmSteps, rows[0].MedianMS, rows[0].P95MS)
	}
	again, err := Modes(app, top, 4, ms, []uint64{1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows, again) {
		t.Error("two runs differ")
	}
}

// TestModeTraces: the paper's load modes, equal volume, the stage levels
// in their ranges, one seed reproducible and another different.
func TestModeTraces(t *testing.T) {
	tr := ModeTraces(100, 1)
	var vb, vg float64
	for _, x := range tr["burst"] {
		vb += x
		if !(x >= 10 && x <= 30 || x >= 70 && x <= 100) {
			t.Errorf("burst level %v outside 10–30%% and 70–100%%", x)
		}
	}
	peak := 0.0
	for _, x := range tr["gradual"] {
		vg += x
		peak = max(peak, x)
	}
	if math.Abs(vb-vg) > 100 || peak != 100 || tr["gradual"][0] != 10 {
		t.Errorf("volumes %v and %v, gradual from %v to peak %v", vb, vg, tr["gradual"][0], peak)
	}
	if n := len(tr["gradual"]); n < 19*5 || n > 19*10 {
		t.Errorf("gradual lasts %d s, want 19 stages of 5–10 s", n)
	}
	if !reflect.DeepEqual(tr, ModeTraces(100, 1)) || reflect.DeepEqual(tr, ModeTraces(100, 2)) {
		t.Error("seed 1 not reproducible or seed 2 identical")
	}
}

// TestPooledLatency: steps of one exponential distribution pool to it;
// weights follow delivered events.
func TestPooledLatency(t *testing.T) {
	exp := StepRecord{Throughput: 100, MeanMS: 10, P95MS: 10 * math.Log(20)}
	if got := PooledLatency([]StepRecord{exp, exp}, 0.5); math.Abs(got-10*math.Ln2) > 1e-6 {
		t.Errorf("median %v, want 10·ln 2", got)
	}
	slow := StepRecord{Throughput: 1, MeanMS: 1000, P95MS: 1000 * math.Log(20)}
	if got := PooledLatency([]StepRecord{exp, slow}, 0.5); got > 10 {
		t.Errorf("median %v: a step delivering 1%% moved it", got)
	}
}
