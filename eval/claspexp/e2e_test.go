package claspexp

import (
	"reflect"
	"testing"

	"streamscale/agents/horizontal"
	"streamscale/clasp"
)

func runCLASP(t *testing.T, app clasp.App, n int, rate float64, steps int) ([]StepRecord, *horizontal.Adapter) {
	t.Helper()
	cfg, err := ClusterConfig(app, n, rate, steps, nil)
	if err != nil {
		t.Fatal(err)
	}
	pcfg := clasp.DefaultConfig()
	pcfg.MaxWorkers = n
	p, err := clasp.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := horizontal.NewAdapter(p, app, n, horizontal.AdapterConfig{BandwidthBytes: BandwidthBytes})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := run(cfg, ctrl, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return recs, ctrl
}

// TestCLASPRunsSYN runs CLASP's plans for SYN on up to 10 workers for 30 steps at
// 700 events/s: the initial plan deploys on at least two workers, every
// re-plan applies without error, the closed loop settles (at most one
// re-plan after the initial one at a constant rate), throughput keeps up
// with the input over the last 10 steps, cumulative throughput never
// exceeds what was offered, and a second run is identical.
func TestCLASPRunsSYN(t *testing.T) {
	const rate = 700
	recs, ctrl := runCLASP(t, clasp.SYN(), 10, rate, 30)
	for _, p := range ctrl.Plans() {
		t.Logf("t=%v workers=%d %s", p.Time, p.NumWorkers(), p.Reason)
	}
	if len(recs) != 30 {
		t.Fatalf("%d steps, want 30", len(recs))
	}
	if len(ctrl.Plans()) == 0 || ctrl.Plans()[0].NumWorkers() < 2 {
		t.Fatalf("initial plan missing or too small: %d plans", len(ctrl.Plans()))
	}
	if len(ctrl.Plans()) > 2 {
		t.Errorf("%d plans at a constant rate: the loop does not settle", len(ctrl.Plans()))
	}
	var tail float64
	for _, r := range recs[20:] {
		tail += r.Throughput / 10
	}
	if tail < 0.97*rate {
		t.Errorf("throughput %.1f/s over the last 10 steps, input %d/s", tail, rate)
	}
	offered, done := 0.0, 0.0
	for i, r := range recs {
		offered += r.Offered
		done += r.Throughput
		if done > offered*(1+1e-9) {
			t.Fatalf("step %d: cumulative throughput %v exceeds offered %v", i, done, offered)
		}
	}
	again, _ := runCLASP(t, clasp.SYN(), 10, rate, 30)
	if !reflect.DeepEqual(recs, again) {
		t.Error("two runs differ")
	}
	other, _ := runCLASP(t, clasp.SYN(), 10, rate/2, 30)
	if reflect.DeepEqual(recs, other) {
		t.Error("a different rate gave the same run")
	}
}
