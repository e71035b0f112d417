package env

import (
	"math"
	"testing"
)

// TestObsBuilder checks every feature of a one-task, one-server
// observation against its formula (obs.go), stepped and at Reset, and
// the history the builder leaves.
func TestObsBuilder(t *testing.T) {
	app := App{SLOMS: 1000, Tasks: []Task{{Name: "t", Selectivity: 1, MIPSPerEvent: 2}}}
	b := ObsBuilder{App: &app, Servers: []Server{{CPU: 2000, RAMMB: 1000}}, MaxCPU: 1000}
	in := ObsInputs{
		Tasks:   []TaskMeasures{{InputRate: 100, Throughput: 50, Queue: 10, DelayS: 0.5, ServiceS: 0.01, Load: 1, CPU: 500}},
		Servers: []ServerMeasures{{CPU: 500, MemoryMB: 250, Tasks: 1}},
		App:     AppMeasures{P95S: 2, MeanS: 1, Throughput: 40},
	}
	for _, stepped := range []bool{true, false} {
		h := NewObsHistory(1)
		h.DelayS[0], h.P95S, h.Violated[0] = 0.25, 1, true
		obs := Observation{App: make([]float64, AppFeatures), Server: make([]float64, ServerFeatures), Task: make([]float64, TaskFeatures)}
		in.Stepped = stepped
		b.Build(obs, &in, &h)
		change, trend, viol := 0.0, 0.0, 0.1
		if stepped {
			change, trend, viol = 1, 1, 0.2
		}
		wantTask := [TaskFeatures]float64{0.5, math.Log1p(100), math.Log1p(200), math.Log1p(50), math.Log1p(10), 0.5, 0.1, math.Log1p(1),
			0.5, 0.01, 0.25 * change, 2 * change, // log1p(10) clipped to 2
			1.0 / 3, 0.25, 0.75}
		wantServer := [ServerFeatures]float64{0.25, 1.5, 0.25, 0.75, 1}
		wantApp := [AppFeatures]float64{1, 2, -1, trend, viol, 0.25, 0.5, 0.5, 0.5, math.Log1p(10), math.Log1p(40)}
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"task", obs.Task, wantTask[:]}, {"server", obs.Server, wantServer[:]}, {"app", obs.App, wantApp[:]}} {
			for i := range c.want {
				if math.Abs(c.got[i]-c.want[i]) > 1e-15 {
					t.Errorf("stepped %v: %s feature %d = %v, want %v", stepped, c.name, i, c.got[i], c.want[i])
				}
			}
		}
		if h.DelayS[0] != 0.5 || h.Queue[0] != 10 || h.P95S != 2 || !h.Violated[0] || h.Violated[1] != stepped || h.Violated[2] {
			t.Errorf("stepped %v: history %+v", stepped, h)
		}
	}
}
