package claspexp

import (
	"math"
	"reflect"
	"testing"

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
	rows, err := Modes(app, top, 4, ms)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].Mode != "burst" || rows[2].Mode != "gradual" || rows[1].Method != "hpa" {
		t.Fatalf("rows %v", rows)
	}
	for _, r := range rows {
		if len(r.Workers) != len(ModeTraces(top)[r.Mode]) || r.MaxWorkers > 4 || r.MaxWorkers < 1 {
			t.Errorf("%s/%s: %d steps, max %d workers", r.Mode, r.Method, len(r.Workers), r.MaxWorkers)
		}
		if r.Delivered > r.Offered*(1+1e-9) || r.ThroughputRatio <= 0 {
			t.Errorf("%s/%s: delivered %v of %v", r.Mode, r.Method, r.Delivered, r.Offered)
		}
	}
	if rows[0].Plans < 2 {
		t.Errorf("CLASP applied %d plans over a burst", rows[0].Plans)
	}
	again, err := Modes(app, top, 4, ms)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows, again) {
		t.Error("two runs differ")
	}
}
