package horizontal

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"streamscale/clasp"
	"streamscale/env"
)

func TestQuantizeShares(t *testing.T) {
	// Two operators whose shares agree to 10⁻¹⁰ get identical shares; each
	// operator's shares sum to exactly 1.
	in := [][]float64{{0.5, 0.5 + 1e-10, 0}, {0.25, 0.25 - 1e-10, 0}, {0.25, 0.25, 0}}
	q := QuantizeShares(in)
	for o := range 2 {
		sum := 0.0
		for w := range q {
			sum += q[w][o]
			if math.Abs(q[w][o]-in[w][o]) > ShareQuantum {
				t.Errorf("share [%d][%d] moved from %v to %v", w, o, in[w][o], q[w][o])
			}
		}
		if sum != 1 {
			t.Errorf("operator %d sums to %v", o, sum)
		}
	}
	for w := range q {
		if q[w][0] != q[w][1] || q[w][2] != 0 {
			t.Errorf("worker %d: %v", w, q[w])
		}
	}
}

func TestObservationFromInfo(t *testing.T) {
	app := clasp.WC()
	info := env.Info{
		OfferedRate: 100, Throughput: 90, PlannerQueue: 7, StateMB: []float64{0, 1.5},
		Workers: []env.WorkerMetrics{
			{Queue: 3, LocalRequests: 450, RemoteRequests: 360, RemoteDestinations: 1, Executions: []float64{90, 450}, ExecUS: []float64{450, 350}, EdgeRequests: []float64{810}, LoadUS: 400000},
			{},
			{Queue: 1, Executions: []float64{0, 360}, ExecUS: []float64{450, 350}, EdgeRequests: []float64{0}},
		},
	}
	info.Workers[1] = env.WorkerMetrics{Executions: []float64{0, 0}, ExecUS: []float64{0, 0}, EdgeRequests: []float64{0}}
	ob, err := ObservationFromInfo(app, info, []int{0, 2}, [][]float64{{1, 0.5}, {0, 0.5}}, []int{1, 2}, DefaultBandwidthBytes)
	if err != nil {
		t.Fatal(err)
	}
	want := clasp.Observation{
		App: app, PlannerQueue: 7, InputRate: 100, Throughput: 90, Parallelism: []int{1, 2}, Bandwidth: DefaultBandwidthBytes,
		StateBytes: []float64{0, 1.5 * (1 << 20)},
		Workers: []clasp.WorkerObs{
			{ID: 0, Queue: 3, LocalRate: 450, RemoteRate: 360, RemoteDests: 1, Exec: []float64{90, 450}, ExecUS: []float64{450, 350}, EdgeRate: []float64{810}, Share: []float64{1, 0.5}, LoadUS: 400000},
			{ID: 2, Queue: 1, Exec: []float64{0, 360}, ExecUS: []float64{450, 350}, EdgeRate: []float64{0}, Share: []float64{0, 0.5}},
		},
	}
	if !reflect.DeepEqual(ob, want) {
		t.Fatalf("got %+v\nwant %+v", ob, want)
	}
	if err := ob.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := ObservationFromInfo(app, info, []int{5}, [][]float64{{1, 1}}, nil, DefaultBandwidthBytes); err == nil {
		t.Error("worker outside the servers accepted")
	}
	if _, err := ObservationFromInfo(app, info, []int{0}, nil, nil, DefaultBandwidthBytes); err == nil {
		t.Error("missing shares accepted")
	}
}

func TestActionFromPlan(t *testing.T) {
	p := clasp.Plan{Changed: true, Workers: []clasp.WorkerPlan{
		{ID: 0, Share: []float64{1, 0.25}},
		{ID: 3, Share: []float64{0, 0.75}},
	}}
	a, err := ActionFromPlan(p, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]env.Replica{{{Server: 0, Share: 1}}, {{Server: 0, Share: 0.25}, {Server: 3, Share: 0.75}}}
	if a.Hold || !reflect.DeepEqual(a.Replicas, want) {
		t.Fatalf("action %+v, want replicas %v", a, want)
	}
	if a, _ := ActionFromPlan(clasp.Plan{}, 4); !a.Hold {
		t.Error("unchanged plan did not hold")
	}
	if _, err := ActionFromPlan(p, 3); err == nil {
		t.Error("plan beyond the servers accepted")
	}
}

func TestNewAdapterErrors(t *testing.T) {
	p, err := clasp.New(clasp.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	app := clasp.WC()
	ok := AdapterConfig{BandwidthBytes: 1}
	for _, tc := range []struct {
		name    string
		servers int
		cfg     AdapterConfig
		want    string
	}{
		{"no bandwidth", 3, AdapterConfig{}, "bandwidth"},
		{"too many workers", 2, AdapterConfig{Servers: []int{0, 1, 2}, BandwidthBytes: 1}, "3 plan workers for 2 servers"},
		{"repeated server", 3, AdapterConfig{Servers: []int{0, 0}, BandwidthBytes: 1}, "maps to server 0"},
		{"speed-ups", 3, AdapterConfig{Speedup: []float64{1}, BandwidthBytes: 1}, "1 speed-ups for 3"},
		{"zero speed-up", 2, AdapterConfig{Speedup: []float64{1, 0}, BandwidthBytes: 1}, "speed-up 0"},
		{"negative capacity", 2, AdapterConfig{BandwidthBytes: 1, CapacityUS: -1}, "capacity"},
	} {
		if _, err := NewAdapter(p, app, tc.servers, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewAdapter(p, app, 3, ok); err != nil {
		t.Errorf("identity mapping: %v", err)
	}
	if _, err := NewAdapter(nil, app, 3, ok); err == nil {
		t.Error("nil planner accepted")
	}
}
