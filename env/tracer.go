package env

import (
	"math"
	"slices"
)

// Tracer parameters of the fast core under stochastic physics.
const (
	// tracerSub is the number of substeps per step of each replica's
	// workload process (50 ms): fine enough for the autocorrelation of a
	// queue near saturation, coarse enough to cost little.
	tracerSub = 20
	// tracerEvents is the number of events sampled per step for the
	// latency percentiles.
	tracerEvents = 48
)

// tracer gives the fast core stochastic latencies (Config.Physics): the
// fluid carries the mass (throughput, queues, backlogs) and a fixed number
// of sampled events per step experience stochastic queueing and service.
//
// Each task replica keeps its workload process V(t), the work (core-
// seconds) ahead of an arriving event, as a reflected random walk over
// tracerSub substeps per step: the work arriving in a substep is normal
// with the mean and variance of the replica's arrivals (λ·Δ·w and
// λ·Δ·w²·(c²_a + c²_s): the diffusion approximation of a G/G/1 queue,
// whose stationary mean is Kingman's formula), and the server removes
// Δ·speed of it, or, under CFS, what is left of its quota in the current
// period. The arrival variability c²_a of each replica is propagated along
// the DAG as in Whitt's Queueing Network Analyzer (Bell System Technical
// Journal 62(9), 1983): departures c²_d = ρ²c²_s + (1 − ρ²)c²_a, thinning
// by p gives p·c² + 1 − p, a fan-out of σ copies σ·c², and merging
// streams average by rate.
//
// A sampled event enters at a uniform (stratified) time of the step, picks
// each next stage with the probability that a sink event took that branch
// (output share times the sink events one event there yields), waits at
// each replica until the work ahead and its own log-normal work are
// served (a CFS-throttled replica runs at full core speed and stalls when
// its quota is spent until the next period), crosses network flows at
// their fluid delay, and its end-to-end latency is recorded. The step's
// p95 and mean are those of the samples (linear interpolation of order
// statistics); per-task mean delays and queues (Little's law) follow from
// the workload processes.
//
// At a fork whose fan-out a join gathers (Task.JoinOf: ETL's SenMLParse
// and Join) the sampled event becomes its n siblings: all n are traced to
// the join (gather, gatherChain), queueing behind one another where they
// meet, and the event goes on from the join when the last leaves it, so a
// message's latency is the slowest sibling's plus the path after the
// join (the maximum of a fork-join, not one sibling's path).
type tracer struct {
	ph   *physicsRun
	cpu  []cpuOf   // per replica stage
	v    []float64 // per replica stage: work ahead at the step's start, core-seconds
	used []float64 // per replica stage: CFS quota used in the current period
	vs   []float64 // per replica stage × (tracerSub+1): work ahead at the substep boundaries
	qs   []float64 // per replica stage × (tracerSub+1): quota left at the substep boundaries
	wbar []float64 // per replica stage: mean wait of the step, seconds
	c2   []float64 // per stage: squared cv of arrivals this step
	arr  []float64 // per stage × tracerSub: events arriving in each substep
	num  []float64 // scratch: Σ rate·c² arriving per stage
	den  []float64 // scratch: Σ rate arriving per stage
	gain []float64 // per stage: expected sink events per event at the stage
	cum  [][]float64
	src  []float64 // cumulative choice weights over the source stages
	lat  []float64 // latencies of the step's samples
	hop  []float64 // per replica stage: mean dispatch latency after it (Physics.HopMS), seconds; 0 at stages without successors
	// subPerSec is the substeps per second of the step being traced
	// (tracerSub / Physics.StepSeconds): a time since the step's start
	// times it is the substep's index.
	subPerSec float64
	// endPeriod is the index of the CFS period the step being traced
	// ends in (quotaLeft).
	endPeriod float64
	// sibH is, per stage, the hop drawn for the message gather traces
	// (its siblings share it, Physics.HopSpread); −1: not drawn yet.
	// lastHop is the hop drawn at the stage the last wait (or gather)
	// left.
	sibH    []float64
	lastHop float64
	// Fork-joins (Task.JoinOf): per stage, the siblings a replica of a
	// fork sends per event (0: not a fork) and the task gathering them;
	// per stage, the sibling run of the message being traced (see
	// gather).
	fanN             []int
	fanJoin          []int
	fanChain         []bool    // per fork stage: every stage up to the join has one successor
	chain            [][]int32 // per fork stage with fanChain: the stages gatherChain visits, the join last
	sibA, sibW, sibF []float64
	sumTab           [][]float64 // per fork stage with n > 2: quantiles of the sum of n − 2 service factors
	sumCV            float64     // the service CV sumTab was built for
	bits             uint64      // unused 12-bit service-factor indices of one draw
	left             int         // indices left in bits
	nrep             int
	p95              float64
	mean             float64
	valid            bool
}

func newTracer(f *fluid, ph *physicsRun, nrep int) *tracer {
	n := len(f.stages)
	t := &tracer{ph: ph, nrep: nrep,
		cpu: make([]cpuOf, nrep), v: make([]float64, nrep), used: make([]float64, nrep),
		vs: make([]float64, nrep*(tracerSub+1)), qs: make([]float64, nrep*(tracerSub+1)), wbar: make([]float64, nrep),
		c2: make([]float64, n), arr: make([]float64, n*tracerSub), num: make([]float64, n), den: make([]float64, n), gain: make([]float64, n),
		cum: make([][]float64, n), lat: make([]float64, tracerEvents),
		fanN: make([]int, n), fanJoin: make([]int, n), fanChain: make([]bool, n), chain: make([][]int32, n), sumTab: make([][]float64, n), sumCV: -1,
		sibA: make([]float64, n), sibW: make([]float64, n), sibF: make([]float64, n), sibH: make([]float64, n),
	}
	for k, fork := range f.joinOf {
		if fork < 0 {
			continue
		}
		for i := range f.stages {
			if f.stages[i].task == fork {
				t.fanN[i], t.fanJoin[i] = int(math.Round(f.stages[i].sel)), k
				chain := len(f.stages[i].out) == 1
				for j := f.stages[i].out[0]; chain && f.stages[j].task != k; j = f.stages[j].out[0] {
					chain = len(f.stages[j].out) == 1
				}
				t.fanChain[i] = chain
				if chain {
					t.chain[i] = chainStages(f, i, k)
				}
			}
		}
	}
	t.hop = make([]float64, nrep)
	for r := range t.cpu {
		t.cpu[r] = cpuOf{service: f.stages[r].service, work: f.stages[r].service, speed: 1, quota: math.Inf(1)}
		if len(f.stages[r].out) > 0 {
			t.hop[r] = f.hop[f.stages[r].task]
		}
	}
	// Sink gains in reverse topological order.
	for k := len(f.order) - 1; k >= 0; k-- {
		i := f.order[k]
		s := &f.stages[i]
		g := 0.0
		if s.sink {
			g = s.sel
		}
		for j, o := range s.out {
			g += s.sel * s.outW[j] * t.gain[o]
		}
		t.gain[i] = g
	}
	for i := range f.stages {
		s := &f.stages[i]
		acc := 0.0
		c := make([]float64, len(s.out))
		for j, o := range s.out {
			acc += s.outW[j] * t.gain[o]
			c[j] = acc
		}
		t.cum[i] = c
	}
	acc := 0.0
	for si, k := range f.sources {
		acc += f.srcW[si] * t.gain[k]
		t.src = append(t.src, acc)
	}
	return t
}

func (t *tracer) reset() {
	clear(t.v)
	clear(t.used)
	t.valid = false
}

// pick returns the index chosen from cumulative weights c by *u ∈ [0, 1)
// and rescales *u to a uniform within the chosen interval, so that one
// uniform chooses a whole path in proportion to its probability
// (stratified uniforms then give every path its share of the samples).
func pick(c []float64, u *float64) int {
	if len(c) == 1 {
		return 0
	}
	total := c[len(c)-1]
	x := *u * total
	lo := 0.0
	for j, v := range c {
		if x < v || j == len(c)-1 {
			if v > lo {
				*u = min(max((x-lo)/(v-lo), 0), 1-1e-12)
			}
			return j
		}
		lo = v
	}
	return len(c) - 1
}

// step advances the workload processes over the step just simulated by
// the fluid core (its arrivals per stage in s.pushed) and samples the
// step's latencies. t0 is the step's start (absolute seconds).
func (t *tracer) step(f *fluid, t0 float64) {
	ph := t.ph
	t.left = 0
	if ph.p.ServiceCV != t.sumCV {
		t.buildSums() // the episode's physics changed (Config.Randomize)
	}
	cs2 := ph.p.ServiceCV * ph.p.ServiceCV
	// Arrival variability along the DAG.
	clear(t.num)
	clear(t.den)
	for _, k := range f.sources {
		t.num[k] += f.stages[k].pushed * ph.arrC2
		t.den[k] += f.stages[k].pushed
	}
	for _, i := range f.order {
		s := &f.stages[i]
		a := ph.arrC2
		if t.den[i] > 0 {
			a = t.num[i] / t.den[i]
		}
		t.c2[i] = a
		d := a
		if i < t.nrep {
			rho := min(s.pushed/ph.stepLen*t.cpu[i].service, 1)
			d = rho*rho*cs2 + (1-rho*rho)*a
		}
		out := s.pushed * s.sel
		switch {
		case s.sel < 1:
			d = s.sel*d + 1 - s.sel
		case s.sel > 1:
			d *= s.sel
		}
		for j, o := range s.out {
			x, c := s.outW[j], d
			if x < 1 {
				c = x*c + 1 - x
			}
			t.num[o] += out * x * c
			t.den[o] += out * x
		}
	}
	// Workload processes, in topological order: each replica's arrivals
	// per substep are what its predecessors' processes served in that
	// substep (a burst is smoothed by the first queue it meets, as in the
	// per-event core), the sources' by the rate modulation.
	const frac = 1.0 / tracerSub // a substep's share of the step
	dt := ph.stepLen * frac      // its length, seconds
	t.subPerSec = tracerSub / ph.stepLen
	if P := ph.cfsPeriod; P > 0 {
		end := t0 + ph.stepLen
		t.endPeriod = math.Ceil(end/P-1e-9) - 1
	}
	P := ph.cfsPeriod
	clear(t.arr)
	// The substeps in which a CFS period starts.
	var periodStart [tracerSub]bool
	if P > 0 {
		for j := range periodStart {
			at := t0 + float64(j)*dt
			periodStart[j] = at-P*math.Floor(at/P+1e-9) < dt-1e-12
		}
	}
	for _, k := range f.sources {
		row := t.arr[k*tracerSub : (k+1)*tracerSub]
		x := f.stages[k].pushed
		for j := range row {
			if ph.p.RateCV > 0 {
				row[j] = x * frac * ph.mult[j*len(ph.mult)/tracerSub] / ph.multMean
			} else {
				row[j] = x * frac
			}
		}
	}
	for _, i := range f.order {
		s := &f.stages[i]
		in := t.arr[i*tracerSub : (i+1)*tracerSub]
		if i >= t.nrep { // a network flow passes its arrivals on
			for _, o := range s.out {
				out := t.arr[o*tracerSub : (o+1)*tracerSub]
				for j, x := range in {
					out[j] += x
				}
			}
			continue
		}
		c := &t.cpu[i]
		var perWork float64 // departures per unit of work served
		if c.work > 0 && !math.IsInf(c.work, 1) {
			perWork = s.sel / c.work
		}
		v, used := t.v[i], t.used[i]
		row, qrow := t.vs[i*(tracerSub+1):(i+1)*(tracerSub+1)], t.qs[i*(tracerSub+1):(i+1)*(tracerSub+1)]
		wsum := 0.0
		sdk := math.Sqrt(t.c2[i]+cs2) * c.work
		// The replica's parameters in locals: the loop's stores could
		// alias them for the compiler.
		work, quota := c.work, c.quota
		active := work > 0 && !math.IsInf(work, 1)
		step := dt * c.speed // served per substep at full speed
		out, outW := s.out, s.outW
		in = in[:tracerSub]
		for j := 0; j < tracerSub; j++ {
			if periodStart[j] {
				used = 0
			}
			row[j], qrow[j] = v, quota-used
			wsum += v
			x := v
			if a := in[j]; a > 0 && active {
				x += a*work + math.Sqrt(a)*sdk*ph.svc.NormFloat64()
			}
			x = max(x, 0)
			capacity := min(step, quota-used)
			served := min(x, capacity)
			v = x - served
			used += served
			if d := served * perWork; d > 0 {
				for jj, o := range out {
					t.arr[o*tracerSub+j] += d * outW[jj]
				}
			}
		}
		row[tracerSub], qrow[tracerSub] = v, quota-used
		t.v[i], t.used[i] = v, used
		t.wbar[i] = 0
		if c.speed > 0 {
			eff := c.speed
			if !math.IsInf(c.quota, 1) && P > 0 {
				eff = min(c.speed, c.quota/P)
			}
			t.wbar[i] = wsum / tracerSub / eff
		}
	}
	// Sampled events.
	t.valid = len(t.src) > 0 && t.src[len(t.src)-1] > 0
	if !t.valid {
		return
	}
	// Stratified sampling: sample e takes path quantile (e + u₁)/N and
	// arrival time frac(u₂ + e·φ) (φ the golden ratio's conjugate), so the
	// paths get their shares of the samples and the times cover the step
	// independently of the path.
	u1, u2 := ph.arr.Float64(), ph.arr.Float64()
	const phi = 0.6180339887498949
	sum := 0.0
	maxHops := 4 * len(f.stages)
	svcTab := ph.svcTable
	for e := range t.lat {
		q := (float64(e) + u1) / tracerEvents
		start := u2 + float64(e)*phi
		start = (start - math.Floor(start)) * ph.stepLen
		i := f.sources[pick(t.src, &q)]
		at := start
		for hop := 0; hop < maxHops; hop++ {
			s := &f.stages[i]
			if i < t.nrep {
				// The event's service factor, drawn from 4,096
				// equiprobable quantiles of the log-normal
				// (physicsRun.svcTable: the tracer's many draws; the
				// discretization moves its p95 by less than 0.1%) with
				// the top 12 bits of one draw, and wait, written out
				// (see gatherChain).
				fac := 1.0
				if svcTab != nil {
					fac = svcTab[ph.svcSrc.Uint64()>>52]
				}
				c := &t.cpu[i]
				own := c.work * fac
				h := t.drawHop(i)
				t.lastHop = h
				if !(c.speed > 0) || math.IsInf(c.work, 1) {
					at += 1e6
				} else {
					j := min(int(max(at, 0)*t.subPerSec), tracerSub)
					base := i * (tracerSub + 1)
					work := t.vs[base+j] + own
					if math.IsInf(c.quota, 1) {
						at += work/c.speed + h
					} else {
						abs := t0 + at
						left := t.quotaLeft(base, j, abs, t0, P, c.quota)
						toEnd := P - (abs - P*math.Floor(abs/P))
						at += cfsDelay(work, left, toEnd, P, c.speed, c.quota) + h
					}
				}
			} else {
				at += s.service + s.delay
			}
			if t.fanN[i] > 0 {
				// A fork: the message goes on from the join when its
				// last sibling leaves it.
				at, i = t.gather(f, i, t0, at)
				s = &f.stages[i]
			}
			if len(s.out) == 0 {
				break
			}
			if s.sink {
				// A sink with successors: stop with the share of the
				// sink events delivered here.
				stop := s.sel / t.gain[i]
				if q < stop {
					if i < t.nrep {
						at -= t.lastHop // delivered here, not dispatched on
					}
					break
				}
				q = (q - stop) / (1 - stop)
			}
			i = s.out[pick(t.cum[i], &q)]
		}
		lat := at - start
		t.lat[e] = lat
		sum += lat
	}
	t.mean = sum / tracerEvents
	// The p95 interpolates the order statistics lo and lo+1 of the
	// samples, which are the 4th and 3rd largest of 48: a pass keeping the
	// four largest finds them (the same values a full sort gives).
	const h = 0.95 * (tracerEvents - 1)
	const lo = 95 * (tracerEvents - 1) / 100
	top := topK(t.lat)
	x, y := top[0], top[min(1, len(top)-1)]
	t.p95 = x + (h-float64(lo))*(y-x)
}

// tracerTop is how many of the largest samples the p95 needs: the order
// statistics from lo = ⌊0.95·(tracerEvents − 1)⌋ up.
const tracerTop = tracerEvents - 95*(tracerEvents-1)/100

// topK returns the tracerTop largest of xs in ascending order (xs has at
// least tracerTop elements): element 0 is order statistic
// len(xs) − tracerTop, as sorting xs would place it.
func topK(xs []float64) [tracerTop]float64 {
	var top [tracerTop]float64
	copy(top[:], xs[:tracerTop])
	slices.Sort(top[:])
	for _, v := range xs[tracerTop:] {
		if !(v > top[0]) {
			continue
		}
		k := 0
		for k+1 < tracerTop && v > top[k+1] {
			top[k] = top[k+1]
			k++
		}
		top[k] = v
	}
	return top
}

// gather traces the siblings that fork replica i sends at time at (seconds
// since t0) for one event to the join gathering them, and returns when the
// last sibling leaves the join and the join replica it leaves. The
// siblings leave the fork together and each takes its own path (chosen by
// the routing shares, stratified) with its own service draws. Siblings meeting at a
// replica queue behind one another: a sibling arriving while an earlier
// one is still there is served as part of a run that began with the
// run's first arrival, its work ahead being the workload process's then
// plus the run's sibling work (so a batch can straddle a CFS period); at
// a network flow they are transmitted one after another. The message's
// latency thus includes the batch at the fork's successors and the
// maximum over the siblings at the join (a fork-join; Task.JoinOf).
func (t *tracer) gather(f *fluid, i int, t0, at float64) (float64, int) {
	if t.fanChain[i] {
		return t.gatherChain(f, i, t0, at)
	}
	ph := t.ph
	clear(t.sibW)
	clear(t.sibF)
	for j := range t.sibH {
		t.sibH[j] = -1
	}
	join := t.fanJoin[i]
	end, last := math.Inf(-1), i
	fork := &f.stages[i]
	n := t.fanN[i]
	u0 := ph.svc.Float64()
	for k := range n {
		// Stratified paths: sibling k takes path quantile (k + u₀)/n, so
		// the siblings split over the replicas by their shares as the
		// per-event core's routing credit splits them (ten siblings over
		// ten equal replicas: one each).
		u := (float64(k) + u0) / float64(n)
		j := fork.out[0]
		if len(fork.out) > 1 {
			j = fork.out[pick(t.cum[i], &u)]
		}
		a := at
		for hop := 0; hop < 4*len(f.stages); hop++ {
			s := &f.stages[j]
			if j < t.nrep {
				own := t.cpu[j].work * t.factor()
				if t.sibH[j] < 0 {
					t.sibH[j] = t.drawHop(j)
				}
				if t.sibW[j] > 0 && t.sibF[j] > a {
					t.sibW[j] += own
					a = t.sibA[j] + t.wait(j, t0, t.sibA[j], t.sibW[j], t.sibH[j])
				} else {
					t.sibA[j], t.sibW[j] = a, own
					a += t.wait(j, t0, a, own, t.sibH[j])
				}
				t.sibF[j] = a
			} else {
				d := max(a, t.sibF[j]) + s.service
				t.sibF[j] = d
				a = d + s.delay
			}
			if s.task == join || len(s.out) == 0 {
				break
			}
			j = s.out[pick(t.cum[j], &u)]
		}
		if a > end {
			end, last = a, j
		}
	}
	t.lastHop = 0
	if last < t.nrep && t.sibH[last] > 0 {
		t.lastHop = t.sibH[last]
	}
	return end, last
}

// gatherChain is gather for a fork whose siblings all take one chain of
// stages to the join (one replica per task between them, the common case),
// at a cost independent of the number of siblings: at each stage it
// follows the first sibling (arriving at a₁) and the last (arriving at
// a_n). The last leaves either at the end of the run of all n siblings
// begun at a₁ (the workload ahead then, plus the n siblings' work W: the
// first's and the last's draws plus one draw of the sum of the n − 2
// between, buildSums) or,
// if the run has ended before it arrives, after its own work from a_n:
// d_n = max(a₁ + wait(a₁, W), a_n + wait(a_n, w_n)). This is exact when
// the siblings all queue behind one another or none does; between the two
// (a stage faster than the one before it with nothing else queued) it can
// fall short of the per-sibling FIFO by less than one sibling's work.
func (t *tracer) gatherChain(f *fluid, i int, t0, at float64) (float64, int) {
	// The draws (factor, index) and wait3 are written out in the loop:
	// a call clobbers every register, and this loop is the tracer's
	// hottest. The random bits stay in locals until the loop ends.
	ph := t.ph
	n := t.fanN[i]
	nf := float64(n)
	a1, an := at, at
	tab, svcTab := t.sumTab[i], ph.svcTable
	bits, left := t.bits, t.left
	chain := t.chain[i]
	for _, c := range chain {
		j := int(c)
		if j >= t.nrep {
			s := &f.stages[j]
			t.lastHop = 0
			d1 := a1 + s.service
			an = max(a1+nf*s.service, an+s.service) + s.delay
			a1 = d1 + s.delay
			continue
		}
		cp := &t.cpu[j]
		w := cp.work
		f1 := 1.0 // factor()
		if svcTab != nil {
			if left == 0 {
				bits, left = ph.svcSrc.Uint64(), 5
			}
			left--
			f1, bits = svcTab[bits>>52], bits<<12
		}
		w1 := w * f1
		W, wn := w1, w1
		if n > 1 {
			fn := 1.0 // factor()
			if svcTab != nil {
				if left == 0 {
					bits, left = ph.svcSrc.Uint64(), 5
				}
				left--
				fn, bits = svcTab[bits>>52], bits<<12
			}
			wn = w * fn
			W += wn
		}
		if tab != nil {
			// The n − 2 siblings between: tab[index()].
			if left == 0 {
				bits, left = ph.svcSrc.Uint64(), 5
			}
			left--
			x := bits >> 52
			bits <<= 12
			W += w * tab[x]
		} else if n > 2 {
			W += w * float64(n-2)
		}
		h := t.drawHop(j) // the siblings share the stage's hop
		t.lastHop = h
		// wait3: the first sibling (own work w₁) and the run of all (W)
		// arriving at a₁, the last (w_n) at a_n, sharing the lookups and
		// the hop.
		var x1, xW, xn float64
		if !(cp.speed > 0) || math.IsInf(cp.work, 1) {
			x1, xW, xn = 1e6, 1e6, 1e6
		} else {
			j1 := min(int(max(a1, 0)*t.subPerSec), tracerSub)
			jn := min(int(max(an, 0)*t.subPerSec), tracerSub)
			base := j * (tracerSub + 1)
			v1, vn := t.vs[base+j1], t.vs[base+jn]
			if math.IsInf(cp.quota, 1) {
				x1, xW, xn = (v1+w1)/cp.speed+h, (v1+W)/cp.speed+h, (vn+wn)/cp.speed+h
			} else {
				P := ph.cfsPeriod
				abs1, absn := t0+a1, t0+an
				left1, leftn := t.quotaLeft(base, j1, abs1, t0, P, cp.quota), t.quotaLeft(base, jn, absn, t0, P, cp.quota)
				toEnd1 := P - (abs1 - P*math.Floor(abs1/P))
				toEndn := P - (absn - P*math.Floor(absn/P))
				x1 = cfsDelay(v1+w1, left1, toEnd1, P, cp.speed, cp.quota) + h
				xW = cfsDelay(v1+W, left1, toEnd1, P, cp.speed, cp.quota) + h
				xn = cfsDelay(vn+wn, leftn, toEndn, P, cp.speed, cp.quota) + h
			}
		}
		an = max(a1+xW, an+xn)
		a1 += x1
	}
	t.bits, t.left = bits, left
	return an, int(chain[len(chain)-1])
}

// chainStages lists the stages gatherChain visits from fork stage i to
// the join task: its successors' chain, the join's stage last (or the
// stage where the chain ends without reaching it), within gatherChain's
// bound of 4·stages.
func chainStages(f *fluid, i, join int) []int32 {
	var c []int32
	j := f.stages[i].out[0]
	for hop := 0; hop < 4*len(f.stages); hop++ {
		c = append(c, int32(j))
		s := &f.stages[j]
		if s.task == join || len(s.out) == 0 {
			break
		}
		j = s.out[0]
	}
	return c
}

// buildSums tabulates, for every fork stage with n > 2 siblings under
// stochastic service, the law of the sum of n − 2 service factors (the
// siblings between the first and the last, whose individual times
// gatherChain does not need): by the Fenton–Wilkinson approximation, a
// log-normal with the sum's mean m = n − 2 and variance m·c² (L. F. Fenton,
// "The sum of log-normal probability distributions in scatter transmission
// systems", IRE Trans. Communications Systems 8(1), 1960, pp. 57–67), as
// 4,096 equiprobable quantiles rescaled to mean exactly m. It allocates
// only when first built.
func (t *tracer) buildSums() {
	cv := t.ph.p.ServiceCV
	t.sumCV = cv
	for i, n := range t.fanN {
		m := float64(n - 2)
		if n <= 2 || !(cv > 0) {
			t.sumTab[i] = nil
			continue
		}
		tab := t.sumTab[i]
		if tab == nil {
			tab = make([]float64, 4096)
			t.sumTab[i] = tab
		}
		s2 := math.Log1p(cv * cv / m)
		mu := math.Log(m) - s2/2
		sum := 0.0
		for k := range tab {
			z := math.Sqrt2 * math.Erfinv(2*(float64(k)+0.5)/float64(len(tab))-1)
			tab[k] = math.Exp(mu + math.Sqrt(s2)*z)
			sum += tab[k]
		}
		for k := range tab {
			tab[k] *= m * float64(len(tab)) / sum
		}
	}
}

// index draws a uniform index into a 4,096-entry table from 12 bits of a
// 64-bit draw kept between calls (five indices per draw; the buffer is
// emptied at every step, so a step's draws depend only on the stream's
// state at its start).
func (t *tracer) index() uint64 {
	if t.left == 0 {
		t.refill()
	}
	t.left--
	x := t.bits
	t.bits = x << 12
	return x >> 52
}

// refill draws index's next 64 bits (out of line, so that index inlines).
//
//go:noinline
func (t *tracer) refill() { t.bits, t.left = t.ph.svcSrc.Uint64(), 5 }

// factor draws a service-time factor from physicsRun.svcTable as the
// sample loop of step does, its table index from index.
func (t *tracer) factor() float64 {
	tab := t.ph.svcTable
	if tab == nil {
		return 1
	}
	return tab[t.index()]
}

// drawHop returns the dispatch latency after replica r for one message:
// its mean (Physics.HopMS, HopMSByTask) times a factor of mean 1 under
// Physics.HopSpread.
func (t *tracer) drawHop(r int) float64 {
	h := t.hop[r]
	if h > 0 {
		h = t.spreadHop(h)
	}
	return h
}

// spreadHop is drawHop's mean hop h > 0 times its factor (out of line,
// so that drawHop inlines).
//
//go:noinline
func (t *tracer) spreadHop(h float64) float64 {
	if t.ph.hopSpread > 0 {
		h *= t.ph.hopFactor()
	}
	return h
}

// wait returns how long an event arriving at replica r at time at
// (seconds since the step's start t0) takes to leave: the work ahead at
// its arrival plus its own work own (core-seconds), served at the
// replica's speed, under CFS only while quota is left in the period; plus
// the dispatch latency hop to its successors (drawHop).
func (t *tracer) wait(r int, t0, at, own, hop float64) float64 {
	c := &t.cpu[r]
	if !(c.speed > 0) || math.IsInf(c.work, 1) {
		return 1e6
	}
	j := min(int(max(at, 0)*t.subPerSec), tracerSub)
	base := r * (tracerSub + 1)
	work := t.vs[base+j] + own
	if math.IsInf(c.quota, 1) {
		return work/c.speed + hop
	}
	P := t.ph.cfsPeriod
	abs := t0 + at
	left := t.quotaLeft(base, j, abs, t0, P, c.quota)
	toEnd := P - (abs - P*math.Floor(abs/P))
	return cfsDelay(work, left, toEnd, P, c.speed, c.quota) + hop
}

// quotaLeft is the CFS quota left to an event at abs seconds that reads
// the replica's workload process (offset base) at substep j of the step
// starting at t0: the process's value inside the step. Past the step's end
// (j = tracerSub) that value belongs to the period the step ends in; an
// event in a later period finds its quota whole (a step of 1 s ends on a
// period boundary, so every event past it does; with shorter steps,
// Physics.StepSeconds, more of the sampled events run past the step's end
// and the stale value would throttle them for up to a period).
func (t *tracer) quotaLeft(base, j int, abs, t0, P, quota float64) float64 {
	if j == tracerSub && math.Floor(abs/P+1e-9) > t.endPeriod {
		return quota
	}
	return max(t.qs[base+j], 0)
}

// cfsDelay is how long work (core-seconds) takes at speed (cores) with
// quota left in the current CFS period, which ends in toEnd seconds, and
// quota per period P.
func cfsDelay(work, left, toEnd, P, speed, quota float64) float64 {
	if work <= left && work <= toEnd*speed {
		return work / speed
	}
	served := min(left, toEnd*speed)
	rem := work - served
	full := math.Floor(rem / quota)
	rem -= full * quota
	d := toEnd + full*P + rem/speed
	if rem == 0 && full > 0 {
		d -= P - quota/speed
	}
	return d
}
