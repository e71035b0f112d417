package env

import (
	"fmt"
	"math"
	"math/rand/v2"

	"streamscale/rng"
)

// PhysicsRanges randomises the physics per episode (domain
// randomisation, for controllers that must hold on a real system whose
// parameters are only roughly known): at every Reset each ranged field of
// Config.Physics is drawn uniformly from its [low, high] (integers
// inclusive) from the stream rng.EnvDomain of the episode seed; the other
// fields keep Config.Physics's values. A zero range [0, 0] leaves the
// field at 0. The drawn physics are reported by Env.Physics.
type PhysicsRanges struct {
	ServiceCV           [2]float64 `json:"service_cv"`
	RateCV              [2]float64 `json:"rate_cv"`
	CapacityJitter      [2]float64 `json:"capacity_jitter"`
	MetricNoise         [2]float64 `json:"metric_noise"`
	ActuationDelaySteps [2]int     `json:"actuation_delay_steps"`
}

// DefaultRanges are the ranges around the realistic preset used for
// domain randomisation: service-time CV 0.5–2, sub-second rate CV
// 0.25–0.75, capacity jitter 0–10%, metric noise 0–10%, actuation delay
// 0–4 steps (half to twice the preset's values, the jitter and noise from
// none to twice theirs).
func DefaultRanges() PhysicsRanges {
	return PhysicsRanges{
		ServiceCV: [2]float64{0.5, 2}, RateCV: [2]float64{0.25, 0.75},
		CapacityJitter: [2]float64{0, 0.1}, MetricNoise: [2]float64{0, 0.1},
		ActuationDelaySteps: [2]int{0, 4},
	}
}

func (r *PhysicsRanges) validate(steps int) error {
	for _, f := range []struct {
		name string
		v    [2]float64
	}{{"service_cv", r.ServiceCV}, {"rate_cv", r.RateCV}, {"capacity_jitter", r.CapacityJitter}, {"metric_noise", r.MetricNoise}} {
		if !(f.v[0] >= 0) || !(f.v[1] >= f.v[0]) || math.IsInf(f.v[1], 0) {
			return fmt.Errorf("env: physics range %s %v, want finite 0 ≤ low ≤ high", f.name, f.v)
		}
	}
	if d := r.ActuationDelaySteps; d[0] < 0 || d[1] < d[0] || d[1] >= steps {
		return fmt.Errorf("env: physics range actuation_delay_steps %v, want 0 ≤ low ≤ high < the episode's %d steps", d, steps)
	}
	return nil
}

// draw returns base with the ranged fields drawn from r.
func (r *PhysicsRanges) draw(base Physics, g *rand.Rand) Physics {
	u := func(v [2]float64) float64 { return v[0] + (v[1]-v[0])*g.Float64() }
	p := base
	p.ServiceCV = u(r.ServiceCV)
	p.RateCV = u(r.RateCV)
	p.CapacityJitter = u(r.CapacityJitter)
	p.MetricNoise = u(r.MetricNoise)
	p.ActuationDelaySteps = r.ActuationDelaySteps[0] + g.IntN(r.ActuationDelaySteps[1]-r.ActuationDelaySteps[0]+1)
	return p
}

// randomize draws the episode's physics at Reset (Config.Randomize) and
// installs them: the core's parameters, the observer's noise and the
// actuation delay.
func (e *Env) randomize(seed uint64) {
	r := e.cfg.Randomize
	if r == nil {
		return
	}
	p := r.draw(e.cfg.Physics, rng.New(seed, rng.EnvDomain))
	e.setPhysics(p)
}

// setPhysics installs episode physics p (same options as Config.Physics,
// other values): the physics run is rebuilt (its streams are reseeded by
// the Reset that follows) and the observer's noise set.
func (e *Env) setPhysics(p Physics) {
	e.phys = p
	ph := newPhysicsRun(p, e.m, e.cfg.SlicesPerStep)
	*e.ph = *ph
	e.ph.arr, e.ph.svc, e.ph.jit, e.ph.rate = rand.New(&e.ph.arrSrc), rand.New(&e.ph.svcSrc), rand.New(&e.ph.jitSrc), rand.New(&e.ph.rateSrc)
	e.met.noise = p.MetricNoise
	e.met.sigma = math.Sqrt(math.Log1p(p.MetricNoise * p.MetricNoise))
}

// Physics returns the physics of the current episode: Config.Physics, or
// the draw of Config.Randomize at the last Reset.
func (e *Env) Physics() Physics { return e.phys }
