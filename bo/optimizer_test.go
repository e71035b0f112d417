package bo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// run minimizes f over dims with budget evaluations and returns the best y and
// the sequence of evaluated points.
func run(f func([]float64) float64, dims []Dim, cfg Config, budget int, seed uint64) (float64, [][]float64, error) {
	o, err := New(dims, cfg, rand.NewPCG(seed, 0x626f))
	if err != nil {
		return 0, nil, err
	}
	var xs [][]float64
	for range budget {
		x, err := o.Suggest()
		if err != nil {
			return 0, nil, err
		}
		if err := o.Observe(x, f(x)); err != nil {
			return 0, nil, err
		}
		xs = append(xs, x)
	}
	_, y, _ := o.Best()
	return y, xs, nil
}

// randomSearch returns the best of budget uniform random evaluations.
func randomSearch(f func([]float64) float64, dims []Dim, budget int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 0x72616e64))
	best := math.Inf(1)
	x := make([]float64, len(dims))
	for range budget {
		for i, d := range dims {
			x[i] = d.Low + rng.Float64()*(d.High-d.Low)
		}
		best = math.Min(best, f(x))
	}
	return best
}

// regrets runs BO and random search on seeds 1..nSeeds in parallel and
// returns the regrets (best − fmin), indexed by seed.
func regrets(t *testing.T, f func([]float64) float64, fmin float64, dims []Dim, cfg Config, budget, nSeeds int) (bo, rs []float64) {
	t.Helper()
	bo = make([]float64, nSeeds)
	rs = make([]float64, nSeeds)
	errs := make([]error, nSeeds)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for s := range nSeeds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			y, _, err := run(f, dims, cfg, budget, uint64(s+1))
			errs[s] = err
			bo[s] = y - fmin
			rs[s] = randomSearch(f, dims, budget, uint64(s+1)) - fmin
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return bo, rs
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// TestBranin checks the optimizer against random search and against the
// accuracy scikit-optimize reaches. The skopt documentation's benchmark of
// gp_minimize on Branin (examples "Comparing surrogate models" and the
// skopt/benchmarks tables) reports a mean best value of about 0.40–0.42
// after 50–200 calls, i.e. a regret of at most about 0.02; we assume the same
// holds at 50 calls with 5 initial points and require the median regret over
// 10 seeds to be below 0.05 after only 30 calls (a stricter budget that
// keeps the suite quick; the median measured is about 0.0014).
func TestBranin(t *testing.T) {
	const (
		budget = 30
		seeds  = 10
	)
	cfg := DefaultConfig()
	bo, rs := regrets(t, Branin, BraninMin, BraninDims(), cfg, budget, seeds)
	mb, mr := median(bo), median(rs)
	t.Logf("Branin, %d evaluations, %d seeds: median regret BO %.5f, random %.5f", budget, seeds, mb, mr)
	if !(mb < mr) {
		t.Errorf("median regret %.5f not below random search's %.5f", mb, mr)
	}
	if !(mb < 0.05) {
		t.Errorf("median regret %.5f, want < 0.05", mb)
	}
}

// TestHartmann6 checks that the optimizer beats random search on the
// six-dimensional Hartmann function with 40 evaluations.
func TestHartmann6(t *testing.T) {
	budget, seeds := 40, 20
	if testing.Short() {
		seeds = 8
	}
	cfg := DefaultConfig()
	bo, rs := regrets(t, Hartmann6, Hartmann6Min, Hartmann6Dims(), cfg, budget, seeds)
	mb, mr := median(bo), median(rs)
	t.Logf("Hartmann6, %d evaluations, %d seeds: median regret BO %.5f, random %.5f", budget, seeds, mb, mr)
	if !(mb < mr) {
		t.Errorf("median regret %.5f not below random search's %.5f", mb, mr)
	}
}

func TestAcquisitionsBeatRandom(t *testing.T) {
	for _, acq := range []string{EI, PI, LCB} {
		t.Run(acq, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Acquisition = acq
			bo, rs := regrets(t, Branin, BraninMin, BraninDims(), cfg, 30, 6)
			mb, mr := median(bo), median(rs)
			t.Logf("median regret %.5f, random %.5f", mb, mr)
			if !(mb < mr) {
				t.Errorf("median regret %.5f not below random search's %.5f", mb, mr)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	dims := []Dim{{Low: -5, High: 10}, {Low: 0, High: 15, Step: 0.5}}
	seq := func(seed uint64) string {
		_, xs, err := run(Branin, dims, DefaultConfig(), 12, seed)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(xs)
	}
	a, b, c := seq(7), seq(7), seq(8)
	if a != b {
		t.Errorf("same seed gave different suggestions:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("different seeds gave identical suggestions:\n%s", a)
	}
}

func TestQuantization(t *testing.T) {
	dims := []Dim{
		{Low: 500, High: 10000, Step: 50},
		{Low: 0.1, High: 1, Step: 0.3}, // grid 0.1, 0.4, 0.7, 1.0
		{Low: 0, High: 1, Step: 0.4},   // grid 0, 0.4, 0.8; High not on grid
		{Low: -1, High: 1},
	}
	cfg := DefaultConfig()
	cfg.NCandidates = 200
	f := func(x []float64) float64 {
		return math.Pow((x[0]-7321)/1000, 2) + x[1] + math.Abs(x[2]-0.9) + x[3]*x[3]
	}
	o, err := New(dims, cfg, rand.NewPCG(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	for range 15 {
		x, err := o.Suggest()
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range dims {
			if x[i] < d.Low || x[i] > d.High {
				t.Fatalf("x[%d] = %v outside [%v, %v]", i, x[i], d.Low, d.High)
			}
			if d.Step > 0 {
				k := (x[i] - d.Low) / d.Step
				if math.Abs(k-math.Round(k)) > 1e-9 {
					t.Fatalf("x[%d] = %v not on grid %v + k·%v", i, x[i], d.Low, d.Step)
				}
			}
		}
		if err := o.Observe(x, f(x)); err != nil {
			t.Fatal(err)
		}
	}
	x, _, _ := o.Best()
	if x[1] != 0.1 {
		t.Errorf("best x[1] = %v, want 0.1", x[1])
	}
}

func TestSuggestIsStableUntilObserve(t *testing.T) {
	o, err := New(BraninDims(), DefaultConfig(), rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		a, _ := o.Suggest()
		a[0] = math.NaN() // the caller owns the returned slice
		b, err := o.Suggest()
		if err != nil {
			t.Fatal(err)
		}
		c, _ := o.Suggest()
		if !slices.Equal(b, c) || math.IsNaN(b[0]) {
			t.Fatalf("step %d: Suggest gave %v then %v", i, b, c)
		}
		if err := o.Observe(b, Branin(b)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewValidation(t *testing.T) {
	good := []Dim{{Low: 0, High: 1}, {Low: 0, High: 1}, {Low: 0, High: 1}}
	mod := func(f func(*Config)) Config {
		c := DefaultConfig()
		f(&c)
		return c
	}
	for _, tc := range []struct {
		dims []Dim
		cfg  Config
		src  rand.Source
		want string
	}{
		{good[:2:2], DefaultConfig(), rand.NewPCG(1, 1), ""},
		{nil, DefaultConfig(), rand.NewPCG(1, 1), "bo: no dimensions"},
		{[]Dim{good[0], good[1], {Low: 5, High: 1}}, DefaultConfig(), rand.NewPCG(1, 1), "bo: dim 2: low 5 >= high 1"},
		{[]Dim{{Low: 1, High: 1}}, DefaultConfig(), rand.NewPCG(1, 1), "bo: dim 0: low 1 >= high 1"},
		{[]Dim{{Low: math.NaN(), High: 1}}, DefaultConfig(), rand.NewPCG(1, 1), "bo: dim 0: bounds [NaN, 1] not finite"},
		{[]Dim{{Low: 0, High: 1, Step: -1}}, DefaultConfig(), rand.NewPCG(1, 1), "bo: dim 0: step -1 not a finite value >= 0"},
		{[]Dim{{Low: 0, High: 1, Step: 2}}, DefaultConfig(), rand.NewPCG(1, 1), "bo: dim 0: step 2 > range 1"},
		{good, mod(func(c *Config) { c.NInitialPoints = 0 }), rand.NewPCG(1, 1), "bo: NInitialPoints 0 < 1"},
		{good, mod(func(c *Config) { c.Acquisition = "ei" }), rand.NewPCG(1, 1), `bo: unknown acquisition "ei"`},
		{good, Config{}, rand.NewPCG(1, 1), "bo: NInitialPoints 0 < 1"},
		{good, mod(func(c *Config) { c.Xi = -1 }), rand.NewPCG(1, 1), "bo: Xi -1 not a finite value ≥ 0"},
		{good, mod(func(c *Config) { c.Kappa = math.Inf(1) }), rand.NewPCG(1, 1), "bo: Kappa +Inf not a finite value ≥ 0"},
		{good, mod(func(c *Config) { c.Eta = 0 }), rand.NewPCG(1, 1), "bo: Eta 0 not a finite value > 0"},
		{good, mod(func(c *Config) { c.NCandidates = 0 }), rand.NewPCG(1, 1), "bo: NCandidates 0 < 1"},
		{good, mod(func(c *Config) { c.NPolish = -1 }), rand.NewPCG(1, 1), "bo: NPolish -1 < 0"},
		{good, mod(func(c *Config) { c.NRestarts = -1 }), rand.NewPCG(1, 1), "bo: NRestarts -1 < 0"},
		{good, mod(func(c *Config) { c.Noise = 0 }), rand.NewPCG(1, 1), "bo: Noise 0 not in (0, 1]"},
		{good, DefaultConfig(), nil, "bo: nil source"},
	} {
		_, err := New(tc.dims, tc.cfg, tc.src)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("New(%v, …) error %q, want %q", tc.dims, got, tc.want)
		}
	}
}

func TestObserveRejectsBadInput(t *testing.T) {
	o, err := New(BraninDims(), DefaultConfig(), rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := o.Best(); ok {
		t.Error("Best ok with no observations")
	}
	if err := o.Observe([]float64{1, 2}, 3); err != nil {
		t.Fatal(err)
	}
	next, _ := o.Suggest()
	for _, tc := range []struct {
		x    []float64
		y    float64
		want string
	}{
		{[]float64{1}, 0, "bo: x has 1 entries, want 2"},
		{nil, 0, "bo: x has 0 entries, want 2"},
		{[]float64{1, 2}, math.NaN(), "bo: y is NaN"},
		{[]float64{1, 2}, math.Inf(-1), "bo: y is -Inf"},
		{[]float64{1, math.NaN()}, 0, "bo: x[1] = NaN outside [0, 15]"},
		{[]float64{-6, 2}, 0, "bo: x[0] = -6 outside [-5, 10]"},
		{[]float64{1, 15.5}, 0, "bo: x[1] = 15.5 outside [0, 15]"},
	} {
		err := o.Observe(tc.x, tc.y)
		if err == nil || err.Error() != tc.want || !strings.HasPrefix(err.Error(), "bo: ") {
			t.Errorf("Observe(%v, %v) error %v, want %q", tc.x, tc.y, err, tc.want)
		}
	}
	if o.Len() != 1 {
		t.Errorf("Len %d after rejected observations, want 1", o.Len())
	}
	x, y, ok := o.Best()
	if !ok || !slices.Equal(x, []float64{1, 2}) || y != 3 {
		t.Errorf("Best = %v, %v, %v", x, y, ok)
	}
	if again, _ := o.Suggest(); !slices.Equal(again, next) {
		t.Errorf("rejected observation changed the suggestion: %v, then %v", next, again)
	}
}

func FuzzObserve(f *testing.F) {
	f.Add(0.0, 0.0, 1.0)
	f.Add(-5.0, 15.0, math.Inf(1))
	f.Add(10.0, 0.0, math.NaN())
	f.Fuzz(func(t *testing.T, x0, x1, y float64) {
		cfg := DefaultConfig()
		cfg.NInitialPoints = 1
		cfg.NCandidates = 20
		cfg.NPolish = 1
		cfg.NRestarts = 0
		o, err := New(BraninDims(), cfg, rand.NewPCG(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe([]float64{x0, x1}, y); err != nil {
			if o.Len() != 0 {
				t.Fatal("rejected observation changed state")
			}
			return
		}
		if err := o.Observe([]float64{x0, x1}, y); err != nil {
			t.Fatal(err)
		}
		x, err := o.Suggest()
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(x, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHedgeGains(t *testing.T) {
	cfg := DefaultConfig()
	o, err := New(BraninDims(), cfg, rand.NewPCG(5, 5))
	if err != nil {
		t.Fatal(err)
	}
	for range cfg.NInitialPoints + 3 {
		x, err := o.Suggest()
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Observe(x, Branin(x)); err != nil {
			t.Fatal(err)
		}
	}
	// Three GP suggestions: the first two have been rewarded, the third is pending.
	if len(o.pending) != 3 {
		t.Fatalf("%d pending proposals, want 3", len(o.pending))
	}
	if o.gains == [3]float64{} {
		t.Error("gains not updated")
	}
	// The rewards are −μ at each proposal under the refitted GP.
	before := o.gains
	props := o.pending
	if _, err := o.Suggest(); err != nil {
		t.Fatal(err)
	}
	for k, p := range props {
		mu, _ := o.gp.Predict(p)
		if got := before[k] - mu; math.Abs(got-o.gains[k]) > 1e-9*math.Max(1, math.Abs(got)) {
			t.Errorf("gain %d = %v, want %v", k, o.gains[k], got)
		}
	}
}
