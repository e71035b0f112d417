package clasp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// truth is a capacity model unlike both the RLS start and the fallback.
var truth = CostModel{Alpha: 52, Beta: 340, Gamma: 70000, Budget: 800000}

// saturatedSample draws a saturated worker's second under m: random request
// mix, execution work filling the rest of the budget, plus noise (relative
// standard deviation noise of W) on the measured work.
func saturatedSample(r *rand.Rand, m CostModel, noise float64) Sample {
	for {
		s := Sample{LocalRate: 8000 * r.Float64(), RemoteRate: 1500 * r.Float64(), RemoteDests: float64(r.IntN(9))}
		s.ExecWork = m.Budget - m.Alpha*s.LocalRate - m.Beta*s.RemoteRate - m.Gamma*s.RemoteDests
		if s.ExecWork > 0.05*m.Budget {
			s.ExecWork += noise * m.Budget * r.NormFloat64()
			return s
		}
	}
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / want }

func TestRLSRecoversModel(t *testing.T) {
	for _, tt := range []struct {
		name  string
		truth CostModel
		noise float64
	}{
		{"paper values, 1% noise", truth, 0.01},
		{"other values, 2% noise", CostModel{Alpha: 60, Beta: 180, Gamma: 30000, Budget: 700000}, 0.02},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewEstimator(DefaultEstimatorConfig())
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, 7))
			for range 100 { // 100 seconds, 4 saturated workers each
				var ss []Sample
				for range 4 {
					ss = append(ss, saturatedSample(r, tt.truth, tt.noise))
				}
				if err := e.Absorb(ss...); err != nil {
					t.Fatal(err)
				}
			}
			raw, m := e.Raw(), e.Model()
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"α", raw.Alpha, tt.truth.Alpha}, {"β", raw.Beta, tt.truth.Beta}, {"γ", raw.Gamma, tt.truth.Gamma},
				{"W", raw.Budget, tt.truth.Budget}, {"W̄", m.Budget, tt.truth.Budget},
			} {
				if relErr(c.got, c.want) > 0.05 {
					t.Errorf("%s = %.1f, want %.1f ± 5%%", c.what, c.got, c.want)
				}
			}
		})
	}
}

// obsWorker builds a worker's observation doing the given work per second
// with the given queue.
func obsWorker(id int, s Sample, queue float64) WorkerObs {
	return WorkerObs{ID: id, Queue: queue, LocalRate: s.LocalRate, RemoteRate: s.RemoteRate, RemoteDests: s.RemoteDests,
		Exec: []float64{s.ExecWork / 400}, ExecUS: []float64{400}, Share: []float64{0.25}}
}

// TestEstimatorExcludesUnsaturated feeds observations in which half the
// workers are saturated (queue growing) and half are idle-ish (no queue,
// working well below W, which would drag Ŵ down if used).
func TestEstimatorExcludesUnsaturated(t *testing.T) {
	// The RLS start: the test is about which workers count, not about
	// moving the estimate.
	truth := DefaultCostModel()
	e, _ := NewEstimator(DefaultEstimatorConfig())
	r := rand.New(rand.NewPCG(3, 4))
	app := App{Name: "one", Operators: []Operator{{Name: "o", ExecUS: 400}}}
	absorbed := 0
	for sec := range 150 {
		ob := Observation{App: app, Bandwidth: 1, InputRate: 1, Throughput: 1}
		for id := range 4 {
			s := saturatedSample(r, truth, 0.01)
			q := 0.0
			if id%2 == 0 {
				q = 100 * float64(sec) // growing
			} else {
				s.ExecWork *= 0.4 // not saturated
			}
			ob.Workers = append(ob.Workers, obsWorker(id, s, q))
		}
		if err := ob.Validate(); err != nil {
			t.Fatal(err)
		}
		absorbed += e.Observe(float64(sec), &ob)
	}
	// Growth needs 3 consecutive increases: seconds 3…149 for workers 0, 2.
	if absorbed != 2*147 {
		t.Errorf("absorbed %d samples, want %d", absorbed, 2*147)
	}
	m := e.Model()
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"α", m.Alpha, truth.Alpha}, {"β", m.Beta, truth.Beta}, {"γ", m.Gamma, truth.Gamma}, {"W̄", m.Budget, truth.Budget}} {
		if relErr(c.got, c.want) > 0.05 {
			t.Errorf("%s = %.1f, want %.1f ± 5%%", c.what, c.got, c.want)
		}
	}

	// The same data with the unsaturated workers counted is badly biased:
	// the exclusion is what makes the estimate work.
	naive, _ := NewEstimator(DefaultEstimatorConfig())
	r = rand.New(rand.NewPCG(3, 4))
	for range 150 {
		for id := range 4 {
			s := saturatedSample(r, truth, 0.01)
			if id%2 == 1 {
				s.ExecWork *= 0.4
			}
			naive.Absorb(s)
		}
	}
	if relErr(naive.Raw().Budget, truth.Budget) < 0.1 {
		t.Errorf("naive estimate Ŵ = %.0f is not biased; the test does not exercise the exclusion", naive.Raw().Budget)
	}
}

func TestSaturationDetection(t *testing.T) {
	cfg := DefaultSaturationConfig()
	tests := []struct {
		name   string
		queues []float64
		rate   float64
		want   []bool
	}{
		{"three growths", []float64{0, 100, 200, 300, 400}, 1000, []bool{false, false, false, true, true}},
		{"creeping growth", []float64{0, 1, 2, 3, 4}, 1000, []bool{false, false, false, false, false}},
		{"growth interrupted", []float64{0, 100, 200, 200, 300, 400, 500}, 1000, []bool{false, false, false, false, false, false, true}},
		{"delay over threshold", []float64{600, 600, 600}, 1000, []bool{false, true, true}}, // not on first sight
		{"delay under threshold", []float64{400, 400, 400}, 1000, []bool{false, false, false}},
		{"executes nothing", []float64{0, 10, 20, 30, 40}, 0, []bool{false, false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSaturation(cfg)
			for i, q := range tt.queues {
				w := WorkerObs{ID: 5, Queue: q, Exec: []float64{tt.rate}}
				if got := s.observe(float64(i), []WorkerObs{w})[0]; got != tt.want[i] {
					t.Errorf("second %d: saturated %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestEstimatorFallbackAndReset(t *testing.T) {
	cfg := DefaultEstimatorConfig()
	e, _ := NewEstimator(cfg)
	if e.Model() != cfg.Fallback {
		t.Errorf("fresh estimator model %+v, want the fallback", e.Model())
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range cfg.MinSamples - 1 {
		e.Absorb(saturatedSample(r, truth, 0))
	}
	if e.Model() != cfg.Fallback {
		t.Errorf("model before MinSamples %+v, want the fallback", e.Model())
	}
	e.Absorb(saturatedSample(r, truth, 0))
	if e.Model() == cfg.Fallback {
		t.Error("model after MinSamples is still the fallback")
	}
	e.Reset()
	if e.Samples() != 0 || e.Model() != cfg.Fallback {
		t.Errorf("after Reset: %d samples, model %+v", e.Samples(), e.Model())
	}
	if err := e.Absorb(Sample{ExecWork: math.NaN()}); err == nil || e.Samples() != 0 {
		t.Errorf("NaN sample: err %v, samples %d", err, e.Samples())
	}
	bad := cfg
	bad.Forget = 1.5
	if _, err := NewEstimator(bad); err == nil {
		t.Error("forget 1.5 accepted")
	}
}

// TestLevelsEqualsDifferenced: on samples with a constant budget W, the
// levels-with-intercept regression of Estimator gives the same α, β, γ and
// W as the paper's differenced Eq. 2 (consecutive samples, W cancels,
// solved by least squares) followed by Eq. 3 (W as the mean of Σ N·τ̄ +
// α·R^l + β·R^r + γ·δ).
func TestLevelsEqualsDifferenced(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var ss []Sample
	for range 60 {
		ss = append(ss, saturatedSample(r, truth, 0))
	}
	cfg := DefaultEstimatorConfig()
	cfg.Forget, cfg.PriorVar = 1, 1e6
	e, _ := NewEstimator(cfg)
	if err := e.Absorb(ss...); err != nil {
		t.Fatal(err)
	}
	levels := e.Raw()

	// Eq. 2: Δ(Σ N·τ̄) = −α·ΔR^l − β·ΔR^r − γ·Δδ, normal equations.
	var a [3][3]float64
	var b [3]float64
	for i := 1; i < len(ss); i++ {
		x := [3]float64{ss[i].LocalRate - ss[i-1].LocalRate, ss[i].RemoteRate - ss[i-1].RemoteRate, ss[i].RemoteDests - ss[i-1].RemoteDests}
		y := -(ss[i].ExecWork - ss[i-1].ExecWork)
		for j := range 3 {
			for k := range 3 {
				a[j][k] += x[j] * x[k]
			}
			b[j] += x[j] * y
		}
	}
	// Gaussian elimination without pivoting (a is positive definite).
	for j := range 3 {
		for k := j + 1; k < 3; k++ {
			f := a[k][j] / a[j][j]
			for c := j; c < 3; c++ {
				a[k][c] -= f * a[j][c]
			}
			b[k] -= f * b[j]
		}
	}
	var th [3]float64
	for j := 2; j >= 0; j-- {
		th[j] = b[j]
		for c := j + 1; c < 3; c++ {
			th[j] -= a[j][c] * th[c]
		}
		th[j] /= a[j][j]
	}
	// Eq. 3.
	var w float64
	for _, s := range ss {
		w += s.ExecWork + th[0]*s.LocalRate + th[1]*s.RemoteRate + th[2]*s.RemoteDests
	}
	w /= float64(len(ss))
	diff := CostModel{Alpha: th[0], Beta: th[1], Gamma: th[2], Budget: w}
	for _, p := range []struct {
		name             string
		lev, dif, target float64
	}{{"alpha", levels.Alpha, diff.Alpha, truth.Alpha}, {"beta", levels.Beta, diff.Beta, truth.Beta}, {"gamma", levels.Gamma, diff.Gamma, truth.Gamma}, {"budget", levels.Budget, diff.Budget, truth.Budget}} {
		if relErr(p.lev, p.dif) > 1e-3 || relErr(p.dif, p.target) > 1e-6 {
			t.Errorf("%s: levels %.4f, differenced %.4f, true %.4f", p.name, p.lev, p.dif, p.target)
		}
	}
}
