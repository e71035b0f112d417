package claspexp

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"streamscale/clasp"
	"streamscale/env"
)

func TestEnvApp(t *testing.T) {
	got, notes, err := EnvApp(clasp.WC(), 500)
	if err != nil {
		t.Fatal(err)
	}
	want := env.App{
		Name: "wc", SLOMS: 500, Sources: []int{0}, Sinks: []int{1},
		Tasks: []env.Task{
			{Name: "split", MIPSPerEvent: 0.45, Selectivity: 9, OutBytes: 256, MemoryMB: 1},
			{Name: "count", MIPSPerEvent: 0.35, Selectivity: 1, OutBytes: 256, MemoryMB: 64, StateMB: 64, Keys: 50000},
		},
		Edges: []env.Edge{{From: 0, To: 1}},
	}
	if !reflect.DeepEqual(got, want) || len(notes) != 0 {
		t.Fatalf("EnvApp(WC) = %+v, %v\nwant %+v", got, notes, want)
	}
	// ETL: Annotate fans out to two successors with ratio 1; the sinks are
	// MQTTPublish and TableInsert; field operators output 90 B requests.
	etl, notes, err := EnvApp(clasp.ETL(), 500)
	if err != nil || len(notes) != 0 {
		t.Fatal(err, notes)
	}
	if !reflect.DeepEqual(etl.Sinks, []int{7, 8}) || etl.Tasks[0].Selectivity != 10 || etl.Tasks[4].Selectivity != 0.1 || etl.Tasks[5].Selectivity != 1 || etl.Tasks[0].OutBytes != 90 {
		t.Fatalf("ETL converted to %+v", etl)
	}
	// Differing ratios of one operator's edges are averaged, with a note.
	a := clasp.App{Name: "fan", Operators: []clasp.Operator{{Name: "a", ExecUS: 100}, {Name: "b", ExecUS: 100}, {Name: "c", ExecUS: 100}},
		Edges: []clasp.Edge{{From: 0, To: 1, Ratio: 1}, {From: 0, To: 2, Ratio: 3}}}
	fan, notes, err := EnvApp(a, 500)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "mean 2") || fan.Tasks[0].Selectivity != 2 {
		t.Fatalf("fan: %v %v %+v", err, notes, fan.Tasks[0])
	}
	if _, _, err := EnvApp(clasp.App{Name: "empty"}, 500); err == nil {
		t.Error("empty app accepted")
	}
}

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
	ob, err := ObservationFromInfo(app, info, []int{0, 2}, [][]float64{{1, 0.5}, {0, 0.5}}, []int{1, 2}, BandwidthBytes)
	if err != nil {
		t.Fatal(err)
	}
	want := clasp.Observation{
		App: app, PlannerQueue: 7, InputRate: 100, Throughput: 90, Parallelism: []int{1, 2}, Bandwidth: BandwidthBytes,
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
	if _, err := ObservationFromInfo(app, info, []int{5}, [][]float64{{1, 1}}, nil, BandwidthBytes); err == nil {
		t.Error("worker outside the servers accepted")
	}
	if _, err := ObservationFromInfo(app, info, []int{0}, nil, nil, BandwidthBytes); err == nil {
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
	// The action is accepted by the simulator.
	cfg, err := Scenario(clasp.WC(), 4, 100, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(0)
	if err := e.ValidateAction(a); err != nil {
		t.Fatal(err)
	}
}
