package clasp

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// nominal is the demand of app at rate from its nominal ratios.
func nominal(app App, rate float64) Demand {
	ob := Observation{App: app, InputRate: rate, Bandwidth: 1}
	return Derive(&ob)
}

// checkPlacement asserts the placement invariants: every operator's shares
// sum to 1, every worker respects the budget, the chunk costs add up to the
// reference load model, and every operator was placed after its successors.
func checkPlacement(t *testing.T, app App, d Demand, m CostModel, budget float64, pl Placement) {
	t.Helper()
	n := len(app.Operators)
	for o := range n {
		var s float64
		for w := range pl.Shares {
			if pl.Shares[w][o] < 0 {
				t.Fatalf("negative share %v of %s on worker %d", pl.Shares[w][o], app.Operators[o].Name, w)
			}
			s += pl.Shares[w][o]
		}
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("shares of %s sum to %.12f, want 1", app.Operators[o].Name, s)
		}
	}
	ref := m.Loads(&app, d, pl.Shares)
	steps := make([]float64, len(pl.Shares))
	for _, st := range pl.Steps {
		steps[st.Worker] += st.Cost
	}
	for w, l := range ref {
		if l.Total() > budget*(1+1e-8)+1e-6 {
			t.Errorf("worker %d load %.3f > budget %.3f", w, l.Total(), budget)
		}
		if math.Abs(l.Total()-steps[w]) > 1e-6*budget {
			t.Errorf("worker %d: incremental load %.6f ≠ reference %.6f (%+v)", w, steps[w], l.Total(), l)
		}
		if math.Abs(l.Total()-pl.Loads[w].Total()) > 1e-9 {
			t.Errorf("worker %d: reported load %.6f ≠ reference %.6f", w, pl.Loads[w].Total(), l.Total())
		}
	}
	pos := make([]int, n)
	for i, o := range pl.Order {
		pos[o] = i
	}
	if len(pl.Order) != n {
		t.Fatalf("order %v places %d of %d operators", pl.Order, len(pl.Order), n)
	}
	for _, e := range app.Edges {
		if pos[e.From] < pos[e.To] {
			t.Errorf("%s placed before its successor %s (order %v)", app.Operators[e.From].Name, app.Operators[e.To].Name, pl.Order)
		}
	}
}

func TestPlaceInvariantsApps(t *testing.T) {
	m := DefaultCostModel()
	for _, name := range AppNames() {
		app, _ := AppByName(name)
		for _, rate := range []float64{0, 50, 500, 2000, 8000, 30000} {
			t.Run(fmt.Sprintf("%s/%g", name, rate), func(t *testing.T) {
				d := nominal(app, rate)
				pl, err := Place(&app, d, m, m.Budget, 10000)
				if errors.Is(err, ErrCapacity) && rate >= 2000 {
					// every successor spread over many workers: the
					// destinations alone exceed a worker (Route)
					t.Skipf("unplaceable under the model: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				checkPlacement(t, app, d, m, m.Budget, pl)
			})
		}
	}
}

// randomApp returns a random DAG: edges only from lower to higher index.
func randomApp(r *rand.Rand) App {
	n := 2 + r.IntN(9)
	app := App{Name: "rand"}
	for i := range n {
		o := Operator{Name: fmt.Sprintf("op%d", i), ExecUS: 20 + 800*r.Float64(), RequestBytes: 100}
		if r.IntN(3) == 0 {
			o.Stateful, o.StateBytes = true, float64(r.IntN(1<<20))
		}
		app.Operators = append(app.Operators, o)
	}
	for j := 1; j < n; j++ {
		// every operator but the first has a predecessor; some have two
		app.Edges = append(app.Edges, Edge{From: r.IntN(j), To: j, Ratio: 0.2 + 3*r.Float64()})
		if i := r.IntN(j); j > 1 && r.IntN(3) == 0 && !slices.ContainsFunc(app.Edges, func(e Edge) bool { return e.From == i && e.To == j }) {
			app.Edges = append(app.Edges, Edge{From: i, To: j, Ratio: r.Float64()})
		}
	}
	return app
}

// TestPlaceInvariantsRandom holds the incremental packing against the
// reference load model on random DAGs, demands and cost models.
func TestPlaceInvariantsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	infeasible := 0
	defer func() {
		if infeasible > 30 {
			t.Errorf("%d of 300 random cases unplaceable", infeasible)
		}
	}()
	for k := range 300 {
		app := randomApp(r)
		if err := app.Validate(); err != nil {
			t.Fatal(err)
		}
		m := CostModel{Alpha: 100 * r.Float64(), Beta: 600 * r.Float64(), Gamma: 60000 * r.Float64(), Budget: 850000}
		d := nominal(app, 10+500*r.Float64())
		budget := m.Budget * (0.5 + 0.5*r.Float64())
		pl, err := Place(&app, d, m, budget, 5000)
		if errors.Is(err, ErrInvalid) {
			t.Fatalf("case %d: %v", k, err)
		}
		if errors.Is(err, ErrCapacity) { // γ·(destinations) above an empty worker's budget
			infeasible++
			continue
		}
		checkPlacement(t, app, d, m, budget, pl)
		if t.Failed() {
			t.Fatalf("case %d failed: app %+v", k, app)
		}
	}
}

func TestPlacementOrderPostpones(t *testing.T) {
	// Diamond a→b, a→c, b→d, c→d. From d the heavier in-edge (b→d) is
	// followed first; a is reached from b before c is placed, so it is
	// postponed and placed after c.
	app := App{Name: "diamond", Operators: []Operator{op("a", 100), op("b", 100), op("c", 100), op("d", 100)},
		Edges: []Edge{{0, 1, 1}, {0, 2, 1}, {1, 3, 1}, {2, 3, 1}}}
	tests := []struct {
		name          string
		edge          []float64
		order, postpo []int
	}{
		{"b heavier", []float64{10, 10, 50, 5}, []int{3, 1, 2, 0}, []int{0}},
		{"c heavier", []float64{10, 10, 5, 50}, []int{3, 2, 1, 0}, []int{0}},
		{"tie to lower index", []float64{10, 10, 7, 7}, []int{3, 1, 2, 0}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Demand{Exec: []float64{1, 1, 1, 1}, ExecUS: []float64{1, 1, 1, 1}, Edge: tt.edge}
			order, post := PlacementOrder(&app, d)
			if !slices.Equal(order, tt.order) || !slices.Equal(post, tt.postpo) {
				t.Errorf("order %v postponed %v, want %v %v", order, post, tt.order, tt.postpo)
			}
		})
	}
}

func TestPlaceColocatesHeaviestEdge(t *testing.T) {
	// x is the sink; a and b both feed it. Only one of them fits next to x
	// whole; the heavier edge's sender must be the one co-located.
	m := DefaultCostModel()
	app := App{Name: "v", Operators: []Operator{op("a", 300), op("b", 300), op("x", 300)},
		Edges: []Edge{{0, 2, 1}, {1, 2, 1}}}
	tests := []struct {
		name        string
		ea, eb      float64
		colocated   int
		splitOrAway int
	}{
		{"a heavier", 1000, 100, 0, 1},
		{"b heavier", 100, 1000, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Demand{Exec: []float64{1000, 1000, 1000}, ExecUS: []float64{300, 300, 300}, Edge: []float64{tt.ea, tt.eb}}
			pl, err := Place(&app, d, m, m.Budget, 10)
			if err != nil {
				t.Fatal(err)
			}
			checkPlacement(t, app, d, m, m.Budget, pl)
			if got := pl.Shares[0][tt.colocated]; got != 1 || pl.Shares[0][2] != 1 {
				t.Errorf("worker 0 holds %.3f of %s and %.3f of x, want both whole", got, app.Operators[tt.colocated].Name, pl.Shares[0][2])
			}
			if pl.Shares[0][tt.splitOrAway] >= 1 {
				t.Errorf("%s also whole on worker 0", app.Operators[tt.splitOrAway].Name)
			}
		})
	}
}

func TestPlaceNewWorkerOnlyWhenFull(t *testing.T) {
	// A chain whose total fits one worker uses one; twice the demand needs
	// two, and the first worker is then filled to the budget.
	m := DefaultCostModel()
	app := App{Name: "chain", Operators: []Operator{op("a", 400), op("b", 400)}, Edges: []Edge{{0, 1, 1}}}
	for _, tt := range []struct {
		rate    float64
		workers int
	}{{500, 1}, {1000, 1}, {1100, 2}, {2000, 3}} {
		d := nominal(app, tt.rate)
		pl, err := Place(&app, d, m, m.Budget, 100)
		if err != nil {
			t.Fatal(err)
		}
		checkPlacement(t, app, d, m, m.Budget, pl)
		if len(pl.Shares) != tt.workers {
			t.Errorf("rate %g: %d workers, want %d (loads %v)", tt.rate, len(pl.Shares), tt.workers, pl.Loads)
		}
		for w := 0; w+1 < len(pl.Loads); w++ {
			// every worker but the last was opened past only because the
			// next chunk did not fit: it is within one destination cost of full
			if pl.Loads[w].Total() < m.Budget-m.Gamma-1 {
				t.Errorf("rate %g: worker %d closed at %.0f µs/s, far below the budget", tt.rate, w, pl.Loads[w].Total())
			}
		}
	}
}

func TestWorkerCountMonotoneInRate(t *testing.T) {
	m := DefaultCostModel()
	for _, name := range AppNames() {
		app, _ := AppByName(name)
		prev := 0
		for rate := 100.0; rate <= 40000; rate *= 1.15 {
			d := nominal(app, rate)
			pl, err := Place(&app, d, m, m.Budget, 10000)
			if errors.Is(err, ErrCapacity) && prev >= 2 {
				break // the destinations alone fill a worker from here on
			}
			if err != nil {
				t.Fatalf("%s at %.0f/s: %v", name, rate, err)
			}
			if len(pl.Shares) < prev {
				t.Errorf("%s: %d workers at %.0f/s after %d at a lower rate", name, len(pl.Shares), rate, prev)
			}
			prev = len(pl.Shares)
		}
		if prev < 2 {
			t.Errorf("%s: at most %d workers", name, prev)
		}
	}
}

func TestPlaceN(t *testing.T) {
	m := DefaultCostModel()
	app := AA()
	d := nominal(app, 3000)
	own, err := Place(&app, d, m, m.Budget, 100)
	if err != nil {
		t.Fatal(err)
	}
	maxLoad := func(pl Placement) float64 {
		var x float64
		for _, l := range pl.Loads {
			x = math.Max(x, l.Total())
		}
		return x
	}
	prevMax := math.Inf(1)
	for n := 1; n <= len(own.Shares)+3; n++ {
		pl, mult, err := PlaceN(&app, d, m, m.Budget, n, 100)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if len(pl.Shares) != n {
			t.Errorf("n=%d: %d workers", n, len(pl.Shares))
		}
		checkPlacement(t, app, d, m, mult*m.Budget, pl)
		if n >= len(own.Shares) && mult > 1+1e-9 {
			t.Errorf("n=%d ≥ CLASP's %d needs multiplier %v > 1", n, len(own.Shares), mult)
		}
		if n < len(own.Shares) && mult <= 1 {
			t.Errorf("n=%d < CLASP's %d fits at multiplier %v ≤ 1", n, len(own.Shares), mult)
		}
		if ml := maxLoad(pl); ml > prevMax*(1+1e-6) {
			t.Errorf("n=%d: max load %.0f above %.0f with fewer workers", n, ml, prevMax)
		}
		prevMax = maxLoad(pl)
	}
}

func TestPlaceErrors(t *testing.T) {
	m := DefaultCostModel()
	app := wc9()
	d := nominal(app, 1000)
	if _, err := Place(&app, d, m, 0, 10); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero budget: %v", err)
	}
	if _, err := Place(&app, d, m, m.Budget, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero max workers: %v", err)
	}
	if _, err := Place(&app, Demand{Exec: []float64{1}}, m, m.Budget, 10); !errors.Is(err, ErrInvalid) {
		t.Errorf("short demand: %v", err)
	}
	bad := d
	bad.ExecUS = []float64{math.NaN(), 1}
	if _, err := Place(&app, bad, m, m.Budget, 10); !errors.Is(err, ErrInvalid) {
		t.Errorf("NaN execution time: %v", err)
	}
	if _, err := Place(&app, nominal(app, 1e6), m, m.Budget, 3); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("too many workers: %v, want a capacity error", err)
	}
	// γ alone exceeds an empty worker's budget: no infinite loop, an error.
	huge := CostModel{Alpha: 1, Beta: 1, Gamma: 2e6, Budget: 1e6}
	if _, err := Place(&app, nominal(app, 5000), huge, huge.Budget, 50); err == nil {
		t.Error("unplaceable demand: no error")
	}
}

func TestRoute(t *testing.T) {
	tests := []struct {
		name     string
		from, to []float64
		want     []Flow
	}{
		{"co-located", []float64{1, 0}, []float64{1, 0}, []Flow{{0, 0, 1}}},
		{"halves spread evenly", []float64{0.5, 0.5}, []float64{0.5, 0.5}, []Flow{{0, 0, 0.25}, {0, 1, 0.25}, {1, 0, 0.25}, {1, 1, 0.25}}},
		{"all remote", []float64{1, 0}, []float64{0, 1}, []Flow{{0, 1, 1}}},
		{"by the receiver's shares", []float64{0.6, 0.4, 0}, []float64{0.2, 0.3, 0.5}, []Flow{{0, 0, 0.12}, {0, 1, 0.18}, {0, 2, 0.3}, {1, 0, 0.08}, {1, 1, 0.12}, {1, 2, 0.2}}},
		{"spread", []float64{0, 0, 1}, []float64{0.25, 0.25, 0.5}, []Flow{{2, 0, 0.25}, {2, 1, 0.25}, {2, 2, 0.5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Route(tt.from, tt.to)
			if len(got) != len(tt.want) {
				t.Fatalf("flows %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].From != tt.want[i].From || got[i].To != tt.want[i].To || math.Abs(got[i].Share-tt.want[i].Share) > 1e-12 {
					t.Errorf("flow %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestLoadsHandExample(t *testing.T) {
	// split on worker 0 (whole), count 40% on 0 and 60% on 1: of split's
	// 9,000 requests/s to count, 3,600 stay local, 5,400 go to worker 1.
	m := DefaultCostModel()
	app := wc9()
	d := nominal(app, 1000)
	l := m.Loads(&app, d, [][]float64{{1, 0.4}, {0, 0.6}})
	w0 := LoadParts{Exec: 1000*450 + 0.4*9000*350, LocalRate: 3600, RemoteRate: 5400, RemoteDests: 1}
	w0.Local, w0.Remote, w0.Dests = 38.5*3600, 275*5400, 51500
	w1 := LoadParts{Exec: 0.6 * 9000 * 350}
	for i, want := range []LoadParts{w0, w1} {
		if math.Abs(l[i].Total()-want.Total()) > 1e-6 || l[i].RemoteDests != want.RemoteDests || math.Abs(l[i].LocalRate-want.LocalRate) > 1e-9 {
			t.Errorf("worker %d: %+v, want %+v", i, l[i], want)
		}
	}
}

func FuzzRoute(f *testing.F) {
	f.Add(0.3, 0.7, 0.0, 0.5, 0.2, 0.3)
	f.Add(1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
	f.Add(0.2, 0.2, 0.6, 0.6, 0.2, 0.2)
	f.Fuzz(func(t *testing.T, a0, a1, a2, b0, b1, b2 float64) {
		norm := func(xs ...float64) []float64 {
			var s float64
			for i, x := range xs {
				if !(x >= 0) || math.IsInf(x, 0) || x > 1e6 {
					xs[i] = 0
				}
				s += xs[i]
			}
			if s == 0 {
				return nil
			}
			for i := range xs {
				xs[i] /= s
			}
			return xs
		}
		a, b := norm(a0, a1, a2), norm(b0, b1, b2)
		if a == nil || b == nil {
			return
		}
		out := make([]float64, 3)
		in := make([]float64, 3)
		for _, fl := range Route(a, b) {
			if fl.Share <= 0 {
				t.Fatalf("non-positive flow %v", fl)
			}
			out[fl.From] += fl.Share
			in[fl.To] += fl.Share
		}
		for w := range 3 {
			if math.Abs(out[w]-a[w]) > 1e-8 || math.Abs(in[w]-b[w]) > 1e-8 {
				t.Fatalf("a=%v b=%v: sent %v received %v", a, b, out, in)
			}
		}
	})
}

func BenchmarkPlace(b *testing.B) {
	m := DefaultCostModel()
	app := NWM()
	d := nominal(app, 2000)
	for b.Loop() {
		if _, err := Place(&app, d, m, m.Budget, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
