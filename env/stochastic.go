package env

import (
	"math"
	"math/rand/v2"

	"streamscale/rng"
)

// physicsRun is an episode's stochastic physics (Config.Physics), shared
// by the Env and its core: one random stream per option, reseeded from the
// episode seed at every Reset, and the per-step capacity of each server.
type physicsRun struct {
	p                       Physics
	arrSrc, svcSrc, jitSrc  rand.PCG
	rateSrc                 rand.PCG
	arr, svc, jit, rate     *rand.Rand
	mult                    []float64 // per source slice of the step: rate factor (RateCV), 1 without
	multMean                float64   // their mean
	rateSigma, rateMu       float64
	speed                   []float64 // per server: capacity factor of the step (jitter), 1 without
	arrC2                   float64   // squared coefficient of variation of inter-arrival times
	svcSigma, svcMu         float64   // log-normal parameters of the service factor (mean 1)
	svcTable                []float64 // the service factor's quantiles at (i + ½)/len, for the tracer's fast draws (tracer.step, factor)
	jitSigma, jitMu         float64   // log-normal parameters of the capacity factor (mean 1)
	arrivalsRandom, tracing bool
	cfsPeriod               float64 // seconds; 0: processor sharing
	stepLen                 float64 // seconds per step (Physics.StepSeconds)
	// Hop draws (Physics.HopSpread): the per-event core's key and the
	// spread, 0 when hops are fixed (the fast core draws from svc).
	hopKey    uint64
	hopSpread float64
}

func newPhysicsRun(p Physics, servers, slices int) *physicsRun {
	ph := &physicsRun{p: p, speed: make([]float64, servers), mult: make([]float64, slices), multMean: 1}
	ph.arr, ph.svc, ph.jit, ph.rate = rand.New(&ph.arrSrc), rand.New(&ph.svcSrc), rand.New(&ph.jitSrc), rand.New(&ph.rateSrc)
	for j := range ph.mult {
		ph.mult[j] = 1
	}
	ph.rateSigma, ph.rateMu = lognormal(p.RateCV)
	switch p.Arrivals {
	case ArrivalsPoisson:
		ph.arrC2, ph.arrivalsRandom = 1, true
	case ArrivalsGamma:
		ph.arrC2, ph.arrivalsRandom = p.ArrivalCV*p.ArrivalCV, true
	}
	ph.svcSigma, ph.svcMu = lognormal(p.ServiceCV)
	if ph.svcSigma > 0 {
		// 4,096 equiprobable quantiles, rescaled to mean exactly 1.
		ph.svcTable = make([]float64, 4096)
		sum := 0.0
		for i := range ph.svcTable {
			z := math.Sqrt2 * math.Erfinv(2*(float64(i)+0.5)/float64(len(ph.svcTable))-1)
			ph.svcTable[i] = math.Exp(ph.svcMu + ph.svcSigma*z)
			sum += ph.svcTable[i]
		}
		for i := range ph.svcTable {
			ph.svcTable[i] *= float64(len(ph.svcTable)) / sum
		}
	}
	ph.jitSigma, ph.jitMu = lognormal(p.CapacityJitter)
	ph.cfsPeriod = p.CFSPeriodMS / 1000
	ph.stepLen = p.StepLength()
	ph.tracing = p.traced()
	if p.hopsDrawn() {
		ph.hopSpread = p.HopSpread
	}
	for i := range ph.speed {
		ph.speed[i] = 1
	}
	return ph
}

// lognormal returns σ and μ of the log-normal distribution with mean 1
// and coefficient of variation cv: σ² = log(1 + cv²), μ = −σ²/2.
func lognormal(cv float64) (sigma, mu float64) {
	s2 := math.Log1p(cv * cv)
	return math.Sqrt(s2), -s2 / 2
}

// reset reseeds every stream from the episode seed.
func (ph *physicsRun) reset(seed uint64) {
	rng.Reseed(&ph.arrSrc, seed, rng.EnvArrivals)
	rng.Reseed(&ph.svcSrc, seed, rng.EnvService)
	rng.Reseed(&ph.jitSrc, seed, rng.EnvJitter)
	rng.Reseed(&ph.rateSrc, seed, rng.EnvRates)
	// The per-event core's hop key: derived from the episode seed under
	// the service stream's name (no new stream name).
	ph.hopKey = rng.Derive(seed, rng.EnvService)
	for i := range ph.speed {
		ph.speed[i] = 1
	}
}

// drawJitter draws every server's capacity factor for the coming step.
func (ph *physicsRun) drawJitter() {
	if ph.p.CapacityJitter == 0 {
		return
	}
	for i := range ph.speed {
		ph.speed[i] = math.Exp(ph.jitMu + ph.jitSigma*ph.jit.NormFloat64())
	}
}

// drawRates draws the rate factor of every source slice of the coming
// step (RateCV).
func (ph *physicsRun) drawRates() {
	if ph.p.RateCV == 0 {
		return
	}
	sum := 0.0
	for j := range ph.mult {
		ph.mult[j] = math.Exp(ph.rateMu + ph.rateSigma*ph.rate.NormFloat64())
		sum += ph.mult[j]
	}
	ph.multMean = sum / float64(len(ph.mult))
}

// serviceFactor draws one event's service-time factor (mean 1): exactly
// log-normal, for the per-event reference core.
func (ph *physicsRun) serviceFactor() float64 {
	if ph.svcSigma == 0 {
		return 1
	}
	return math.Exp(ph.svcMu + ph.svcSigma*ph.svc.NormFloat64())
}

// hopFactor draws a hop's factor (mean 1) for the fast core
// (hopFactorFrom); 1 when hops are fixed (no draw). It draws from the
// service stream, which a snapshot carries, so a restored Env continues
// bit for bit; the stream moves only when hops are spread (one draw up to
// HopSpread 1, two above).
func (ph *physicsRun) hopFactor() float64 {
	if ph.hopSpread == 0 {
		return 1
	}
	if ph.hopSpread <= 1 {
		return hopFactorFrom(ph.hopSpread, ph.svcSrc.Uint64(), 0)
	}
	a := ph.svcSrc.Uint64()
	return hopFactorFrom(ph.hopSpread, a, ph.svcSrc.Uint64())
}

// hopFactorFrom is a hop's factor under spread s from one or two uniform
// words: up to s = 1 uniform on [1 − s, 1 + s] (a alone); above it the
// uniform on [0, 2] with probability 2 − s and an exponential of mean 1
// with probability s − 1 (a picks the component, b draws in it), so the
// coefficient of variation rises from 1/√3 at s = 1 to 1 at s = 2:
// CV² = 1/3 + 2(s − 1)/3.
func hopFactorFrom(s float64, a, b uint64) float64 {
	if s <= 1 {
		return 1 + s*(2*unit(a)-1)
	}
	if unit(a) < s-1 {
		return -math.Log1p(-unit(b))
	}
	return 2 * unit(b)
}

// hopFactorOf is hopFactor for the per-event core, a function of the
// episode and of the record: message msg dispatched to stage to. Every
// record of one message sent to one stage (a fork's siblings, an
// execution's outputs) shares the factor, as records dispatched in one
// batch share its wait.
func (ph *physicsRun) hopFactorOf(msg uint64, to int) float64 {
	if ph.hopSpread == 0 {
		return 1
	}
	x := mix64(ph.hopKey ^ mix64(msg) ^ mix64(uint64(to)+0x632be59bd9b4e019))
	return hopFactorFrom(ph.hopSpread, x, mix64(x^0x9e3779b97f4a7c15))
}

// unit maps 64 random bits to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) * 0x1p-53 }

// mix64 is SplitMix64's finalizer (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014): a bijection
// of 64-bit words whose outputs pass as independent uniforms.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// count draws the number of arrivals in an interval whose expected count
// is mean: Poisson for Poisson arrivals; for a gamma renewal process the
// count's variance is mean·c² (its asymptotic index of dispersion). Small
// means are drawn exactly (Poisson by inversion, gamma as a thinned or
// compounded Poisson), large ones by the normal approximation, clipped at 0.
func (ph *physicsRun) count(mean float64) float64 {
	if !(mean > 0) {
		return 0
	}
	if mean < 30 {
		n := poisson(ph.arr, mean/ph.arrC2)
		return n * ph.arrC2
	}
	return max(0, mean+math.Sqrt(mean*ph.arrC2)*ph.arr.NormFloat64())
}

// poisson draws a Poisson variate of mean m < ~50 by inversion.
func poisson(r *rand.Rand, m float64) float64 {
	l, k, p := math.Exp(-m), 0.0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// gap draws an inter-arrival time at rate λ > 0.
func (ph *physicsRun) gap(rate float64) float64 {
	if ph.p.Arrivals == ArrivalsGamma {
		k := 1 / ph.arrC2
		return gammaVariate(ph.arr, k) / (k * rate)
	}
	return ph.arr.ExpFloat64() / rate
}

// gammaVariate draws Gamma(k, 1) (Marsaglia and Tsang, 2000; for k < 1 by
// the boost U^{1/k}).
func gammaVariate(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaVariate(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// cpuOf describes how a replica executes: its per-event service time at
// its share of the CPU (what the fluid core uses), the work of one event
// in core-seconds, the speed at which it runs when it runs (cores), and
// its CFS quota per period in core-seconds of work (+Inf without CFS or
// when the allocation is a whole core or more).
type cpuOf struct {
	service, work, speed, quota float64
	// lat is a pipelined replica's execution time, seconds per event
	// (Config.Worker); 0 otherwise.
	lat float64
}

// cpuModel returns replica execution parameters for service time svc
// (seconds per event at the replica's effective cores eff, its nominal
// cores slowed by γ and the host's jitter) under ph. Under CFS the
// replica runs on up to CFSThreads cores (at least its nominal share) at
// the same efficiency while quota is left, and has a quota of its
// effective cores times the period; it is throttled only when its nominal
// share is below the cores it can use.
func (ph *physicsRun) cpuModel(svc, eff, nominal float64) cpuOf {
	c := cpuOf{service: svc, work: svc * eff, speed: eff, quota: math.Inf(1)}
	threads := float64(max(ph.p.CFSThreads, 1))
	if ph.cfsPeriod > 0 && nominal > 0 && nominal < threads {
		c.speed, c.quota = eff/nominal*threads, eff*ph.cfsPeriod
	}
	return c
}
