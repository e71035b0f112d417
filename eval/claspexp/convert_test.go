package claspexp

import (
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
			{Name: "split", MIPSPerEvent: 0.45, Selectivity: 12, OutBytes: 256, MemoryMB: 1},
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
	if !reflect.DeepEqual(etl.Sinks, []int{9}) || etl.Tasks[0].Selectivity != 10 || etl.Tasks[4].Selectivity != 0.1 || etl.Tasks[5].Selectivity != 1 || etl.Tasks[0].OutBytes != 90 {
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
