package clasp

import (
	"math"
	"slices"
	"testing"
)

func TestDeriveMeasuredAndNominal(t *testing.T) {
	app := wc9()
	ob := Observation{App: app, InputRate: 1200, Throughput: 1000, Bandwidth: 1, Workers: []WorkerObs{
		{ID: 0, Exec: []float64{600, 5400}, ExecUS: []float64{400, 300}, EdgeRate: []float64{5400}, Share: []float64{0.6, 0.6}},
		{ID: 3, Exec: []float64{400, 3600}, ExecUS: []float64{500, 400}, EdgeRate: []float64{3600}, Share: []float64{0.4, 0.4}},
	}}
	if err := ob.Validate(); err != nil {
		t.Fatal(err)
	}
	d := Derive(&ob)
	if !d.Measured || math.Abs(d.Scale-1.2) > 1e-12 {
		t.Fatalf("measured %v scale %v, want true 1.2", d.Measured, d.Scale)
	}
	want := []float64{1200, 10800}
	for o := range want {
		if math.Abs(d.Exec[o]-want[o]) > 1e-9 {
			t.Errorf("D_%d = %v, want %v", o, d.Exec[o], want[o])
		}
	}
	if math.Abs(d.Edge[0]-10800) > 1e-9 {
		t.Errorf("E = %v, want 10800", d.Edge[0])
	}
	// execution-weighted τ̄: (600·400 + 400·500)/1000 = 440; (5400·300 + 3600·400)/9000 = 340
	if math.Abs(d.ExecUS[0]-440) > 1e-9 || math.Abs(d.ExecUS[1]-340) > 1e-9 {
		t.Errorf("τ̄ = %v, want [440 340]", d.ExecUS)
	}
	ob.Throughput = 0
	d = Derive(&ob)
	if d.Measured || d.Exec[0] != 1200 || math.Abs(d.Exec[1]-10800) > 1e-9 || d.Scale != 1 {
		t.Errorf("nominal fallback: %+v", d)
	}
}

func TestDerivePropagated(t *testing.T) {
	app := wc9()
	// Steady state (ratios 9 per split, throughput = input): same as Derive.
	steady := measuredObs(app, 1200, 1000, []float64{1000, 9000}, []float64{9000}, nil)
	a, b := Derive(&steady), DerivePropagated(&steady)
	for o := range a.Exec {
		if math.Abs(a.Exec[o]-b.Exec[o]) > 1e-9 {
			t.Errorf("steady: propagated D_%d = %v, Derive %v", o, b.Exec[o], a.Exec[o])
		}
	}
	if math.Abs(b.Edge[0]-a.Edge[0]) > 1e-9 || math.Abs(b.Scale-1.2) > 1e-12 {
		t.Errorf("steady: E %v vs %v, scale %v", b.Edge[0], a.Edge[0], b.Scale)
	}
	// Draining: counts run at 2,000 sentences' worth (18,000/s) while split
	// sees the input (1,000/s) and the sinks deliver 2,000/s. Derive scales
	// by λ/Λ = 0.5 and sizes split for 500/s; propagation keeps split at the
	// input rate and count at the measured ratio 9.
	drain := measuredObs(app, 1000, 2000, []float64{1000, 18000}, []float64{9000}, nil)
	if d := Derive(&drain); math.Abs(d.Exec[0]-500) > 1e-9 {
		t.Errorf("draining: Derive D_split = %v, want 500", d.Exec[0])
	}
	d := DerivePropagated(&drain)
	if math.Abs(d.Exec[0]-1000) > 1e-9 || math.Abs(d.Exec[1]-9000) > 1e-9 || math.Abs(d.Edge[0]-9000) > 1e-9 {
		t.Errorf("draining: propagated D = %v, E = %v, want [1000 9000], 9000", d.Exec, d.Edge)
	}
	// Nothing measured: the nominal demand, as Derive.
	none := Observation{App: app, InputRate: 100, Bandwidth: 1}
	if d := DerivePropagated(&none); d.Measured || d.Exec[1] != 900 {
		t.Errorf("nominal: %+v", d)
	}
}

func TestParallelism(t *testing.T) {
	tests := []struct {
		name    string
		d       Demand
		current []int
		want    []int
	}{
		{"scale 2 of 6, ∝ work 1:2:3", Demand{Scale: 2, Measured: true, Exec: []float64{1, 2, 3}, ExecUS: []float64{1, 1, 1}}, []int{2, 2, 2}, []int{2, 4, 6}},
		{"at least one each", Demand{Scale: 0.1, Measured: true, Exec: []float64{1, 1000, 0}, ExecUS: []float64{1, 1, 1}}, []int{5, 5, 5}, []int{1, 1, 1}},
		{"largest remainder, ties to lower index", Demand{Scale: 1, Measured: true, Exec: []float64{1, 1, 1}, ExecUS: []float64{1, 1, 1}}, []int{2, 2, 1}, []int{2, 2, 1}},
		{"no current: busy executors", Demand{Scale: 1, Exec: []float64{5000, 1000}, ExecUS: []float64{400, 300}}, nil, []int{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parallelism(tt.d, tt.current)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParallelismSums(t *testing.T) {
	for _, name := range AppNames() {
		app, _ := AppByName(name)
		for _, s := range []float64{0.3, 0.9, 1, 1.37, 4} {
			d := nominal(app, 1000)
			d.Measured, d.Scale = true, s
			cur := make([]int, len(app.Operators))
			tot := 0
			for o := range cur {
				cur[o] = 1 + o%3
				tot += cur[o]
			}
			p := Parallelism(d, cur)
			sum := 0
			for _, x := range p {
				if x < 1 {
					t.Errorf("%s s=%v: P %v has an entry < 1", name, s, p)
				}
				sum += x
			}
			want := max(len(cur), int(math.Round(s*float64(tot))))
			if sum != want {
				t.Errorf("%s s=%v: Σ P = %d, want %d", name, s, sum, want)
			}
			// more work never gets fewer instances
			for a := range p {
				for b := range p {
					if d.Work(a) > d.Work(b) && p[a] < p[b] {
						t.Errorf("%s s=%v: %v: op %d has more work but fewer instances than %d", name, s, p, a, b)
					}
				}
			}
		}
	}
}

func TestAppsData(t *testing.T) {
	wantOps := map[string]int{"wc": 2, "sd": 2, "aa": 5, "pl": 6, "nwm": 10, "etl": 10, "syn": 10}
	for _, name := range AppNames() {
		app, err := AppByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(app.Operators) != wantOps[name] {
			t.Errorf("%s has %d operators, want %d", name, len(app.Operators), wantOps[name])
		}
	}
	for _, tt := range []struct {
		app  App
		want float64
	}{{WC(), 12.0 / 13}, {PL(), 0.2}} {
		if f := tt.app.StateTouchFraction(); math.Abs(f-tt.want) > 1e-9 {
			t.Errorf("%s touches state in %.3f of executions, want %.2f", tt.app.Name, f, tt.want)
		}
	}
	if _, err := AppByName("nope"); err == nil {
		t.Error("unknown app: no error")
	}
	nwm := NWM()
	if s := nwm.Sources(); !slices.Equal(s, []int{0}) {
		t.Errorf("nwm sources %v", s)
	}
	if s := nwm.Sinks(); !slices.Equal(s, []int{9}) {
		t.Errorf("nwm sinks %v", s)
	}
}

func TestAppValidateRejects(t *testing.T) {
	base := func() App { return SD() }
	tests := []struct {
		name string
		mut  func(*App)
	}{
		{"no operators", func(a *App) { a.Operators = nil }},
		{"duplicate name", func(a *App) { a.Operators[1].Name = a.Operators[0].Name }},
		{"zero exec", func(a *App) { a.Operators[0].ExecUS = 0 }},
		{"NaN state", func(a *App) { a.Operators[0].StateBytes = math.NaN() }},
		{"stateless with state", func(a *App) { a.Operators[1].StateBytes = 5 }},
		{"self loop", func(a *App) { a.Edges = append(a.Edges, Edge{1, 1, 1}) }},
		{"missing op", func(a *App) { a.Edges = append(a.Edges, Edge{0, 7, 1}) }},
		{"negative ratio", func(a *App) { a.Edges[0].Ratio = -1 }},
		{"duplicate edge", func(a *App) { a.Edges = append(a.Edges, Edge{0, 1, 2}) }},
		{"cycle", func(a *App) { a.Edges = append(a.Edges, Edge{1, 0, 1}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := base()
			tt.mut(&a)
			if err := a.Validate(); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestApportionMinOne(t *testing.T) {
	tests := []struct {
		w     []float64
		total int
		want  []int
	}{
		{[]float64{0, 0}, 5, []int{3, 2}},
		{[]float64{0, 1, 1}, 3, []int{1, 1, 1}},
		{[]float64{0, 1, 3}, 10, []int{1, 2, 7}},
		{[]float64{1, 100}, 2, []int{1, 1}},
		{[]float64{1, 2, 3}, 12, []int{2, 4, 6}},
	}
	for _, tt := range tests {
		got := apportionMinOne(tt.w, tt.total)
		if !slices.Equal(got, tt.want) {
			t.Errorf("apportion(%v, %d) = %v, want %v", tt.w, tt.total, got, tt.want)
		}
	}
}

func TestDrainSizesForBacklog(t *testing.T) {
	app := SYN()
	exec, edge := app.NominalDemand(300)
	workers := func(queue float64, drain float64) int {
		t.Helper()
		cfg := DefaultConfig()
		cfg.DrainS = drain
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ob := measuredObs(app, 300, 300, exec, edge, nil)
		ob.Workers[0].Share = make([]float64, len(app.Operators)) // not deployed: plans at once
		ob.Workers[0].Queue = queue
		p, err := c.Plan(0, ob)
		if err != nil {
			t.Fatal(err)
		}
		return p.NumWorkers()
	}
	// 30,000 queued requests are 3,000 input events (10 executions each):
	// draining them in 10 s doubles the demand.
	base, backlog, off := workers(0, 10), workers(30000, 10), workers(30000, 0)
	if backlog <= base || off != base {
		t.Errorf("workers: %d without backlog, %d with (drain 10 s), %d with drain off", base, backlog, off)
	}
}
