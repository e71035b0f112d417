package claspexp

import (
	"fmt"
	"math"

	"streamscale/clasp"
	"streamscale/env"
	"streamscale/traces"
)

// Cluster constants of the homogeneous serverless scenario (paper §6).
const (
	// WorkerMillicores is each worker's CPU, millicores: 0.85 cores, so a
	// worker completes W = 850,000 µs of work per second.
	WorkerMillicores = 850
	// MIPSPerCore is each worker's per-core speed: 1,000 MIPS, so one
	// million instructions take 1,000 µs and MIPSPerEvent = ExecUS/1,000.
	MIPSPerCore = 1000
	// LinkBps and LinkMS describe every link of the star network: 10 Gbps
	// and 0.05 ms one-way propagation (a worker-to-worker route crosses two
	// links, so 0.1 ms).
	LinkBps = 10e9
	LinkMS  = 0.05
	// BandwidthBytes is a worker's network bandwidth as the planners see
	// it, bytes/s (one 10 Gbps link).
	BandwidthBytes = LinkBps / 8
	// DefaultSLOMS is the SLO on p95 end-to-end latency used for reporting,
	// milliseconds. The paper reports throughput, not an SLO; one second
	// leaves room for the 100 ms cohort resolution of the fluid core and a
	// short queue, and flags only a backlog that keeps growing.
	DefaultSLOMS = 1000
	// workerRAMMB is each worker's memory, large enough never to bind.
	workerRAMMB = 1 << 20
)

// TrueModel is the cost model the scenarios simulate: the paper's α, β, γ
// and W = WorkerMillicores·MIPSPerCore µs/s (850,000).
func TrueModel() clasp.CostModel {
	m := clasp.DefaultCostModel()
	m.Budget = WorkerMillicores * 1000
	return m
}

// EnvApp converts a CLASP application to the simulator's:
//
//   - operator o becomes task o with MIPSPerEvent = ExecUS/1,000 (1,000 MIPS
//     per core), StateMB = StateBytes/2²⁰, Keys = Keys (the state grows as
//     keys are seen) and MemoryMB = max(1, StateMB);
//   - edges keep their order, so env edge e is clasp edge e;
//   - the simulator's selectivity is per task and every output goes to every
//     successor, so task o's Selectivity is the ratio of its outgoing edges;
//     where the ratios of one operator's edges differ the mean is used and a
//     note says so (none of the paper's applications needs it);
//   - OutBytes, the size of o's output events, is the RequestBytes of its
//     first successor (its own for a sink);
//   - sources are the operators without predecessors, sinks those without
//     successors; the SLO is sloMS.
func EnvApp(a clasp.App, sloMS float64) (env.App, []string, error) {
	if err := a.Validate(); err != nil {
		return env.App{}, nil, fmt.Errorf("claspexp: %w", err)
	}
	var notes []string
	out := env.App{Name: a.Name, SLOMS: sloMS, Sources: a.Sources(), Sinks: a.Sinks()}
	for o, op := range a.Operators {
		sum, cnt, lo, hi := 0.0, 0, math.Inf(1), math.Inf(-1)
		outBytes := op.RequestBytes
		first := true
		for _, e := range a.Edges {
			if e.From != o {
				continue
			}
			if first {
				outBytes, first = a.Operators[e.To].RequestBytes, false
			}
			sum += e.Ratio
			cnt++
			lo, hi = min(lo, e.Ratio), max(hi, e.Ratio)
		}
		sel := 1.0
		if cnt > 0 {
			sel = sum / float64(cnt)
			if hi-lo > 1e-12 {
				notes = append(notes, fmt.Sprintf("%s: operator %s has edge ratios %v…%v; the simulator uses their mean %v for every successor", a.Name, op.Name, lo, hi, sel))
			}
		}
		stateMB := op.StateBytes / (1 << 20)
		out.Tasks = append(out.Tasks, env.Task{
			Name:         op.Name,
			MIPSPerEvent: op.ExecUS / 1000,
			Selectivity:  sel,
			OutBytes:     outBytes,
			MemoryMB:     max(1, stateMB),
			StateMB:      stateMB,
			Keys:         op.Keys,
		})
	}
	for _, e := range a.Edges {
		out.Edges = append(out.Edges, env.Edge{From: e.From, To: e.To})
	}
	return out, notes, nil
}

// Cluster returns n homogeneous serverless workers on a star network:
// switch 0 is the core, worker i sits on switch i+1, linked to the core at
// LinkBps with LinkMS propagation.
func Cluster(n int) (env.Network, []env.Server) {
	net := env.Network{Switches: n + 1}
	servers := make([]env.Server, n)
	for i := range servers {
		net.Links = append(net.Links, env.Link{A: 0, B: i + 1, BandwidthBps: LinkBps, PropagationMS: LinkMS})
		servers[i] = env.Server{
			Name: fmt.Sprintf("worker%d", i), Model: "serverless",
			CPU: WorkerMillicores, MIPS: WorkerMillicores * MIPSPerCore / 1000,
			RAMMB: workerRAMMB, Switch: i + 1,
		}
	}
	return net, servers
}

// capInFlight sets the workers' cap on requests in flight
// (env.WorkerPhysics.MaxInFlight; 0: none) when the worker physics are on.
func capInFlight(cfg *env.Config, n int) {
	if cfg.Worker.On {
		cfg.Worker.MaxInFlight = n
	}
}

// ClusterConfig builds the simulator configuration of app on n workers with a
// constant input rate for steps seconds: shared-CPU workers with the paper's
// worker physics (env.PaperWorkers: executor slots at full core speed
// behind a serial dispatch path of W̄, 1 ms per remote hop, 20 ms timer
// batching of inputs and remote requests), the paper's request costs, and every task initially on worker 0 (a controller's
// first plan deploys it) unless replicas is non-nil.
func ClusterConfig(app clasp.App, n int, rate float64, steps int, replicas [][]env.Replica) (env.Config, error) {
	if n < 1 {
		return env.Config{}, fmt.Errorf("claspexp: %d workers, want ≥ 1", n)
	}
	if steps < 1 {
		return env.Config{}, fmt.Errorf("claspexp: %d steps, want ≥ 1", steps)
	}
	ea, _, err := EnvApp(app, DefaultSLOMS)
	if err != nil {
		return env.Config{}, err
	}
	net, servers := Cluster(n)
	m := TrueModel()
	cfg := env.Config{
		App: ea, Network: net, Servers: servers,
		Placement: make([]int, len(ea.Tasks)),
		Replicas:  replicas,
		Requests:  env.RequestCosts{AlphaUS: m.Alpha, BetaUS: m.Beta, GammaUS: m.Gamma},
		SharedCPU: true,
		Worker:    env.PaperWorkers(),
		Workload:  traces.FromRates("constant", []float64{rate}), // replayed for Steps
		Steps:     steps,
	}
	return cfg, nil
}
