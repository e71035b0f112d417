package clasp

// CostModel holds the parameters of the worker capacity model (paper Eq. 1):
//
//	W_w = Σ_o N_{w,o}·τ̄_{w,o} + α·R^l_w + β·R^r_w + γ·δ_w ≤ W
//
// Request costs are charged to the sending worker.
type CostModel struct {
	// Alpha is α, the cost of sending one local request, µs.
	Alpha float64
	// Beta is β, the cost of sending one remote request, µs.
	Beta float64
	// Gamma is γ, the cost of one distinct remote destination worker per
	// second (connection and batching overhead), µs.
	Gamma float64
	// Budget is W, the work one worker completes per second, µs/s.
	Budget float64
}

// DefaultCostModel returns the values measured in the paper (§4.1): α = 38.5
// µs, β = 275 µs, γ = 51,500 µs, W = 850,000 µs/s.
func DefaultCostModel() CostModel {
	return CostModel{Alpha: 38.5, Beta: 275, Gamma: 51500, Budget: 850000}
}

// DefaultExecUS is the paper's measured mean execution time, µs.
const DefaultExecUS = 400

// DefaultSlots is the number of executor slots per worker (paper §6).
const DefaultSlots = 10

func (m CostModel) validate() error {
	if !nonNegative(m.Alpha) || !nonNegative(m.Beta) || !nonNegative(m.Gamma) || !positive(m.Budget) {
		return invalidf("cost model α=%v β=%v γ=%v µs, W=%v µs/s: want finite α, β, γ ≥ 0 and W > 0", m.Alpha, m.Beta, m.Gamma, m.Budget)
	}
	return nil
}

// LoadParts is a worker's load L_w under Eq. 1, by component, µs/s.
type LoadParts struct {
	Exec   float64 // Σ_o N_{w,o}·τ̄_o
	Local  float64 // α·R^l_w
	Remote float64 // β·R^r_w
	Dests  float64 // γ·δ_w
	// LocalRate, RemoteRate (requests/s) and RemoteDests (δ_w) are the
	// drivers of Local, Remote and Dests.
	LocalRate, RemoteRate float64
	RemoteDests           int
}

// Total is L_w, the sum of the components, µs/s.
func (l LoadParts) Total() float64 { return l.Exec + l.Local + l.Remote + l.Dests }

// Flow is a share of one edge's requests from worker index From to worker
// index To: From sends Share·E_e requests/s to To.
type Flow struct {
	From, To int
	Share    float64
}

// Route splits one edge's requests between workers, given the sender's
// shares from[w] = φ_{o,w} and the receiver's shares to[w] = φ_{o_s,w} over
// workers in plan order: every sending worker spreads its requests over the
// receiver's workers in proportion to the receiver's shares, so w sends
// from[w]·to[v]/Σto of the edge's requests to v. The placement shares are
// the routing weights (a key-partitioned or load-balanced exchange): a
// worker keeps local only the part of its requests whose destination
// instance it also hosts, which is what makes co-location worth packing
// for. Flows are returned sorted by (From, To); every flow is positive.
func Route(from, to []float64) []Flow {
	n := min(len(from), len(to))
	var sum float64
	for v := range n {
		sum += max(0, to[v])
	}
	if sum <= 0 {
		return nil
	}
	var flows []Flow
	for w := range n {
		if from[w] <= 0 {
			continue
		}
		for v := range n {
			if to[v] > 0 {
				flows = append(flows, Flow{w, v, from[w] * to[v] / sum})
			}
		}
	}
	return flows
}

// OpensDest reports whether a remote flow of this share opens a
// destination: any positive flow does, as in the simulator.
func OpensDest(share float64) bool { return share > 0 }

// Loads is the load model L_w(Φ) of the paper (§4.3): for every worker (in
// plan order), the load of executing its shares of the demand d and of
// sending its requests, routed by Route. shares[w][o] = φ_{o,w}. It is the
// reference against which Place's incremental bookkeeping is tested. The
// app must be valid and d and shares sized for it (as Derive and Place
// return them).
func (m CostModel) Loads(app *App, d Demand, shares [][]float64) []LoadParts {
	n := len(shares)
	out := make([]LoadParts, n)
	for w, sh := range shares {
		for o, s := range sh {
			out[w].Exec += s * d.Exec[o] * d.ExecUS[o]
		}
	}
	dest := make([][]bool, n)
	for w := range dest {
		dest[w] = make([]bool, n)
	}
	from := make([]float64, n)
	to := make([]float64, n)
	for ei, e := range app.Edges {
		if d.Edge[ei] <= 0 {
			continue
		}
		for w := range n {
			from[w], to[w] = shares[w][e.From], shares[w][e.To]
		}
		for _, f := range Route(from, to) {
			r := f.Share * d.Edge[ei]
			if f.From == f.To {
				out[f.From].LocalRate += r
			} else {
				out[f.From].RemoteRate += r
				if OpensDest(f.Share) {
					dest[f.From][f.To] = true
				}
			}
		}
	}
	for w := range out {
		for _, b := range dest[w] {
			if b {
				out[w].RemoteDests++
			}
		}
		out[w].Local = m.Alpha * out[w].LocalRate
		out[w].Remote = m.Beta * out[w].RemoteRate
		out[w].Dests = m.Gamma * float64(out[w].RemoteDests)
	}
	return out
}
