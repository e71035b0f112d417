package harness

import (
	"fmt"
	"math"
	"math/rand/v2"

	"streamscale/clasp"
	"streamscale/rng"
)

// Cluster is the fluid model of workers executing a plan.
type Cluster struct {
	// App is the application; True the true capacity model; ExecUS the true
	// execution time per operator (µs); Bandwidth the reported bandwidth.
	App       clasp.App
	True      clasp.CostModel
	ExecUS    []float64
	Bandwidth float64
	// Noise is the relative standard deviation of measurement noise on the
	// reported execution times and rates (0: exact).
	Noise float64

	rng    *rand.Rand
	ids    []int
	shares [][]float64
	par    []int
	qp     float64
	last   Step
}

// Step is what the cluster did in one second, for assertions.
type Step struct {
	Offered    []float64 // L_w, µs/s offered per worker (input plus backlog)
	Served     []float64 // work done per worker, µs/s
	Fraction   float64   // f, the bottleneck's served fraction
	Throughput float64   // Λ, requests/s
}

// New returns a cluster with no workers. seed seeds the noise stream.
func New(app clasp.App, truth clasp.CostModel, seed uint64, noise float64) (*Cluster, error) {
	if err := app.Validate(); err != nil {
		return nil, err
	}
	if !(truth.Budget > 0) || truth.Alpha < 0 || truth.Beta < 0 || truth.Gamma < 0 || !(noise >= 0) {
		return nil, fmt.Errorf("harness: bad truth %+v or noise %v", truth, noise)
	}
	c := &Cluster{App: app, True: truth, Bandwidth: 125e6, Noise: noise, rng: rng.New(seed, rng.ClaspHarnessNoise)}
	for _, o := range app.Operators {
		c.ExecUS = append(c.ExecUS, o.ExecUS)
	}
	return c, nil
}

// Apply adopts a plan's workers, shares and parallelism (instantly: the
// harness models no migration time).
func (c *Cluster) Apply(p clasp.Plan) {
	c.ids, c.shares = nil, nil
	for _, w := range p.Workers {
		c.ids = append(c.ids, w.ID)
		c.shares = append(c.shares, append([]float64(nil), w.Share...))
	}
	c.par = append([]int(nil), p.Parallelism...)
}

// Backlog is Q_p, the requests waiting at the planner.
func (c *Cluster) Backlog() float64 { return c.qp }

// Last returns the previous step's internals.
func (c *Cluster) Last() Step { return c.last }

// Workers is the current number of workers.
func (c *Cluster) Workers() int { return len(c.ids) }

func (c *Cluster) noisy(x float64) float64 {
	if c.Noise == 0 || x == 0 {
		return x
	}
	return math.Max(0, x*(1+c.Noise*c.rng.NormFloat64()))
}

// offer is the cluster's offered load at a total rate r.
type offer struct {
	exec, edge      []float64   // demand per operator and edge
	loc, rem, delta []float64   // per worker: local and remote requests/s, destinations
	reqW            []float64   // per worker: offered executions/s
	sent            [][]float64 // per worker and edge: requests/s sent
	offered, fw     []float64   // per worker: L_w and the servable fraction f_w
	frac            float64     // f = min_w f_w
}

func (c *Cluster) offer(r float64) offer {
	app := &c.App
	nOps, nW := len(app.Operators), len(c.ids)
	var of offer
	of.exec, of.edge = app.NominalDemand(r)
	of.loc, of.rem, of.delta = make([]float64, nW), make([]float64, nW), make([]float64, nW)
	of.reqW, of.offered, of.fw = make([]float64, nW), make([]float64, nW), make([]float64, nW)
	execW := make([]float64, nW)
	dest := make([][]bool, nW)
	of.sent = make([][]float64, nW)
	for w := range dest {
		dest[w] = make([]bool, nW)
		of.sent[w] = make([]float64, len(app.Edges))
		for o := range nOps {
			execW[w] += c.shares[w][o] * of.exec[o] * c.ExecUS[o]
			of.reqW[w] += c.shares[w][o] * of.exec[o]
		}
	}
	from, to := make([]float64, nW), make([]float64, nW)
	for e, ed := range app.Edges {
		for w := range nW {
			from[w], to[w] = c.shares[w][ed.From], c.shares[w][ed.To]
			of.sent[w][e] = from[w] * of.edge[e]
		}
		if of.edge[e] <= 0 {
			continue
		}
		for _, f := range clasp.Route(from, to) {
			if f.From == f.To {
				of.loc[f.From] += f.Share * of.edge[e]
			} else {
				of.rem[f.From] += f.Share * of.edge[e]
				if clasp.OpensDest(f.Share) {
					dest[f.From][f.To] = true
				}
			}
		}
	}
	t := c.True
	of.frac = 1
	for w := range nW {
		for _, b := range dest[w] {
			if b {
				of.delta[w]++
			}
		}
		scal := execW[w] + t.Alpha*of.loc[w] + t.Beta*of.rem[w]
		of.offered[w] = scal + t.Gamma*of.delta[w]
		of.fw[w] = 1
		if of.offered[w] > t.Budget && scal > 0 {
			of.fw[w] = math.Max(0, (t.Budget-t.Gamma*of.delta[w])/scal)
		}
		of.frac = math.Min(of.frac, of.fw[w])
	}
	return of
}

// LoadsAt returns each worker's offered load L_w (µs/s, true model) at
// input rate r without backlog, in plan order; it changes nothing.
func (c *Cluster) LoadsAt(r float64) []float64 { return c.offer(r).offered }

// Step runs one second at the given input rate and returns the observation
// of it. The cluster tries to serve the input and the planner's backlog,
// r = λ + Q_p; backpressure lets it serve the fraction f of r.
func (c *Cluster) Step(rate float64) clasp.Observation {
	app := &c.App
	nOps, nW := len(app.Operators), len(c.ids)
	ob := clasp.Observation{App: c.App, InputRate: rate, Bandwidth: c.Bandwidth, Parallelism: append([]int(nil), c.par...)}
	reff := rate + c.qp
	if nW == 0 {
		c.qp = reff
		ob.PlannerQueue = c.qp
		c.last = Step{}
		return ob
	}
	of := c.offer(reff)
	t, frac := c.True, of.frac
	served := make([]float64, nW)
	for w := range nW {
		served[w] = frac*(of.offered[w]-t.Gamma*of.delta[w]) + t.Gamma*of.delta[w]
	}
	thr := frac * reff
	c.qp = reff - thr
	ob.Throughput = thr
	ob.PlannerQueue = c.qp
	for w := range nW {
		wo := clasp.WorkerObs{
			ID:        c.ids[w],
			LocalRate: c.noisy(frac * of.loc[w]), RemoteRate: c.noisy(frac * of.rem[w]), RemoteDests: of.delta[w],
			Exec: make([]float64, nOps), ExecUS: make([]float64, nOps), EdgeRate: make([]float64, len(app.Edges)),
			Share: append([]float64(nil), c.shares[w]...),
		}
		if frac < 1 && of.fw[w] <= frac+1e-12 && reff > 0 {
			wo.Queue = c.qp * of.reqW[w] / reff // the backlog's executions bound for the bottleneck
		}
		for o := range nOps {
			wo.Exec[o] = frac * c.shares[w][o] * of.exec[o]
			if wo.Exec[o] > 0 {
				wo.ExecUS[o] = c.noisy(c.ExecUS[o])
			}
		}
		for e := range app.Edges {
			wo.EdgeRate[e] = frac * of.sent[w][e]
		}
		ob.Workers = append(ob.Workers, wo)
	}
	c.last = Step{Offered: of.offered, Served: served, Fraction: frac, Throughput: thr}
	return ob
}
