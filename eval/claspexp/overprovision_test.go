package claspexp

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"streamscale/clasp"
)

// TestOverprovisionSYNJSON runs experiment (2) for SYN with a short probe
// and checks that its clasp.json fields are present, finite and positive,
// and that the run is deterministic.
func TestOverprovisionSYNJSON(t *testing.T) {
	pr := Probe{Steps: 6, MinRatio: 0.97, MaxBacklogS: 0.25, Iters: 3}
	rows, err := Overprovision([]clasp.App{clasp.SYN()}, []int{1, 5, 10}, pr)
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	r.Probe = pr
	r.setOverprovision(rows)
	js, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	finite := func(name string, v any) {
		t.Helper()
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
			t.Errorf("%s = %v, want a finite positive number", name, v)
		}
	}
	finite("syn_p95_ratio_5", m["syn_p95_ratio_5"])
	finite("syn_p95_ratio_10", m["syn_p95_ratio_10"])
	p95, _ := m["overprovision_p95_ms"].(map[string]any)
	syn, _ := p95["syn"].(map[string]any)
	for _, n := range []string{"1", "5", "10"} {
		finite("overprovision_p95_ms.syn."+n, syn[n])
	}
	if len(rows) != 1 || rows[0].Rate <= 0 {
		t.Fatalf("rows %+v", rows)
	}
	t.Logf("rate %.0f p95 %v ratio %v", rows[0].Rate, rows[0].P95MS, rows[0].Ratio)
	// With the worker physics over-provisioning raises p95 (remote hops
	// add RPC latency and batching); without them (processor sharing) the
	// saturated single worker is the slowest.
	if r := rows[0].Ratio; !(r["5"] > 1 && r["10"] > r["5"]) {
		t.Errorf("worker physics: ratios %v, want 1 < ratio 5 < ratio 10", r)
	}
	ps := pr
	ps.ProcessorSharing = true
	psRows, err := Overprovision([]clasp.App{clasp.SYN()}, []int{1, 5, 10}, ps)
	if err != nil {
		t.Fatal(err)
	}
	if r := psRows[0].Ratio; !(r["5"] < 1) {
		t.Errorf("processor sharing: ratios %v, want ratio 5 < 1", r)
	}
	if md := r.Markdown(); !strings.Contains(md, "## (2) Over-provisioning") || !strings.Contains(md, "| syn |") {
		t.Error("markdown lacks the over-provisioning table")
	}
	again, err := Overprovision([]clasp.App{clasp.SYN()}, []int{1, 5, 10}, pr)
	if err != nil {
		t.Fatal(err)
	}
	js2, _ := json.Marshal(again)
	js1, _ := json.Marshal(rows)
	if string(js1) != string(js2) {
		t.Error("two runs differ")
	}
}
