package clasp

import "math"

// WorkerObs is what one active worker reports for the last second (paper
// Table 2). Per-operator slices are indexed by operator, per-edge slices by
// App.Edges index; a nil slice means all zeros.
type WorkerObs struct {
	// ID identifies the worker; IDs are unique and ascending in
	// Observation.Workers.
	ID int
	// Queue is Q_w, requests waiting at the worker.
	Queue float64
	// LocalRate is R^l_w, requests/s the worker sent to operators on itself.
	LocalRate float64
	// RemoteRate is R^r_w, requests/s the worker sent to other workers.
	RemoteRate float64
	// RemoteDests is δ_w, distinct remote destination workers per second.
	RemoteDests float64
	// Exec is N_{w,o}, executions/s of operator o on the worker.
	Exec []float64
	// ExecUS is τ̄_{w,o}, the mean execution time of o on the worker, µs
	// (read only where Exec > 0).
	ExecUS []float64
	// EdgeRate is E^{o→o_s}_w, requests/s sent by the worker on each edge.
	EdgeRate []float64
	// Share is the current placement φ_{o,w}: the worker's share of
	// operator o's demand, in [0, 1].
	Share []float64
	// LoadUS is the worker's measured CPU use, µs/s (its CPU counter: the
	// executions and the request sending, W_w of Eq. 1 as it ran); 0 when
	// not reported. Only the CPU-utilization baseline (HPA) reads it.
	LoadUS float64
	// ReportS is the length of the interval the rates were measured over,
	// s (the runtime's worker report; 0 where not known, as in the
	// simulator, whose step is the interval). Repeated marks a report that
	// an earlier observation already carried: a runtime worker reports on
	// its own clock, and a late report leaves the previous one in force at
	// the next decision. Decisions may ignore both; a measurement that
	// averages over reports must count each once.
	ReportS  float64
	Repeated bool
}

// Observation is the planner's input for one decision (paper Table 2): the
// per-worker metrics, the planner-level rates, the application and the
// current configuration. The planner does not retain it.
type Observation struct {
	// App is the application DAG.
	App App
	// Workers are the active workers, IDs strictly ascending. Empty before
	// the first deployment.
	Workers []WorkerObs
	// PlannerQueue is Q_p, requests waiting at the planner (ingress).
	PlannerQueue float64
	// InputRate is λ_p, external requests/s arriving.
	InputRate float64
	// Throughput is Λ, external requests/s completed.
	Throughput float64
	// Parallelism is the current P_o per operator; nil before the first
	// deployment.
	Parallelism []int
	// StateBytes is each operator's current state, bytes; nil means the
	// App's nominal StateBytes.
	StateBytes []float64
	// Bandwidth is the network bandwidth of one worker, bytes/s > 0, used
	// to estimate migration pauses.
	Bandwidth float64
}

// shareTol is the tolerance on Σ_w φ_{o,w} = 1.
const shareTol = 1e-6

// Validate checks the observation: a valid app, finite non-negative metrics,
// slices of the right length, ascending unique worker IDs, and for every
// operator shares summing to 1 (placed) or 0 (not yet placed).
func (ob *Observation) Validate() error {
	if err := ob.App.Validate(); err != nil {
		return err
	}
	nOps, nEdges := len(ob.App.Operators), len(ob.App.Edges)
	for _, v := range []struct {
		what string
		x    float64
	}{{"planner queue", ob.PlannerQueue}, {"input rate", ob.InputRate}, {"throughput", ob.Throughput}} {
		if !nonNegative(v.x) {
			return invalidf("%s %v, want finite ≥ 0", v.what, v.x)
		}
	}
	if !positive(ob.Bandwidth) {
		return invalidf("bandwidth %v B/s, want > 0", ob.Bandwidth)
	}
	if ob.Parallelism != nil {
		if len(ob.Parallelism) != nOps {
			return invalidf("parallelism has %d entries, want %d", len(ob.Parallelism), nOps)
		}
		for o, p := range ob.Parallelism {
			if p < 0 {
				return invalidf("parallelism of %s is %d, want ≥ 0", ob.App.Operators[o].Name, p)
			}
		}
	}
	if ob.StateBytes != nil {
		if len(ob.StateBytes) != nOps {
			return invalidf("state sizes have %d entries, want %d", len(ob.StateBytes), nOps)
		}
		for o, s := range ob.StateBytes {
			if !nonNegative(s) {
				return invalidf("state of %s is %v B, want finite ≥ 0", ob.App.Operators[o].Name, s)
			}
		}
	}
	sum := make([]float64, nOps)
	for i, w := range ob.Workers {
		if i > 0 && w.ID <= ob.Workers[i-1].ID {
			return invalidf("worker IDs not strictly ascending at index %d (%d after %d)", i, w.ID, ob.Workers[i-1].ID)
		}
		if w.ID < 0 {
			return invalidf("worker ID %d, want ≥ 0", w.ID)
		}
		for _, v := range []struct {
			what string
			x    float64
		}{{"queue", w.Queue}, {"local rate", w.LocalRate}, {"remote rate", w.RemoteRate}, {"remote destinations", w.RemoteDests}, {"load", w.LoadUS}} {
			if !nonNegative(v.x) {
				return invalidf("worker %d: %s %v, want finite ≥ 0", w.ID, v.what, v.x)
			}
		}
		for _, v := range []struct {
			what string
			xs   []float64
			n    int
		}{{"executions", w.Exec, nOps}, {"execution times", w.ExecUS, nOps}, {"edge rates", w.EdgeRate, nEdges}, {"shares", w.Share, nOps}} {
			if v.xs == nil {
				continue
			}
			if len(v.xs) != v.n {
				return invalidf("worker %d: %s have %d entries, want %d", w.ID, v.what, len(v.xs), v.n)
			}
			for j, x := range v.xs {
				if !nonNegative(x) {
					return invalidf("worker %d: %s[%d] = %v, want finite ≥ 0", w.ID, v.what, j, x)
				}
			}
		}
		for o, s := range w.Share {
			if s > 1+shareTol {
				return invalidf("worker %d: share of %s is %v > 1", w.ID, ob.App.Operators[o].Name, s)
			}
			sum[o] += s
		}
	}
	for o, s := range sum {
		if s != 0 && math.Abs(s-1) > shareTol {
			return invalidf("shares of %s sum to %v, want 1 (placed) or 0 (not placed)", ob.App.Operators[o].Name, s)
		}
	}
	return nil
}

// at returns xs[i], or 0 for a nil slice.
func at(xs []float64, i int) float64 {
	if xs == nil {
		return 0
	}
	return xs[i]
}

// placed reports whether the observation carries a placement (some worker
// holds a share of some operator).
// totals returns the measured executions per operator, Σ_w N_{w,o}, and
// requests per edge, Σ_w E^e_w, per second.
func (ob *Observation) totals() (exec, sent []float64) {
	exec = make([]float64, len(ob.App.Operators))
	sent = make([]float64, len(ob.App.Edges))
	for _, w := range ob.Workers {
		for o := range exec {
			exec[o] += at(w.Exec, o)
		}
		for e := range sent {
			sent[e] += at(w.EdgeRate, e)
		}
	}
	return exec, sent
}

// backlog returns the requests queued at the planner plus those queued at
// the workers in input-event equivalents: Σ_w Q_w divided by the executions
// one input event causes, k = Σ_o D_o/λ_p (d is the projected demand).
func (ob *Observation) backlog(d Demand) float64 {
	q := ob.PlannerQueue
	var work, exec float64
	for _, w := range ob.Workers {
		work += w.Queue
	}
	for _, x := range d.Exec {
		exec += x
	}
	if work > 0 && exec > 0 && ob.InputRate > 0 {
		q += work / (exec / ob.InputRate)
	}
	return q
}

func (ob *Observation) placed() bool {
	for _, w := range ob.Workers {
		for _, s := range w.Share {
			if s > 0 {
				return true
			}
		}
	}
	return false
}

// stateBytes returns operator o's current state size.
func (ob *Observation) stateBytes(o int) float64 {
	if ob.StateBytes != nil {
		return ob.StateBytes[o]
	}
	return ob.App.Operators[o].StateBytes
}
