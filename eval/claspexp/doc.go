// Package claspexp reproduces the CLASP evaluation (Qi, Rodriguez & Buyya,
// arXiv 2608.29103, §6) in the simulator: it builds the homogeneous
// serverless cluster, converts the paper's applications to env.App, and
// runs the experiments of `go run ./eval clasp`, driving clasp planners
// through the one horizontal adapter (agents/horizontal.Adapter) and the
// one episode loop (agents.RunEpisode).
//
// # What it owns
//
//   - the scenario (ClusterConfig, Cluster, EnvApp): N workers of 850 millicores
//     at 1,000 MIPS per core (W = 850,000 µs/s), a star network (a switch per
//     worker, each linked to one core switch at 10 Gbps and 0.05 ms), shared
//     CPU, the paper's request costs α = 38.5 µs, β = 275 µs,
//     γ = 51,500 µs, and the paper's worker physics (env.PaperWorkers:
//     8 cores, 10 executor slots at full core speed behind a serial dispatch
//     path of W̄, 1 ms RPC latency per remote hop, 20 ms timer batching of
//     inputs and remote requests checked every 5 ms, no cap on requests in
//     flight unless Options.MaxInFlight sets one);
//   - the experiments (Scaling, Overprovision, StateLocalities,
//     Coefficients, Placements, WorkerTransitions, Modes, Migrations), their
//     report (Report, Markdown) and figures (Figures).
//
// # Routing
//
// The simulator's default routing spreads every sender's requests over the
// successor's replicas in proportion to their shares, which is clasp.Route;
// with env.Config.LocalFirst it keeps requests on the sender's server
// first (used here only by the routing ablation of experiment 4,
// Probe.LocalFirst). Shares are quantized (horizontal.QuantizeShares) so the plan and
// the simulator see the same replicas.
//
// # Units
//
// As in package clasp: µs for execution and request costs, µs/s for loads,
// events (requests) per second for rates, seconds for time, MB for moved
// state as the simulator reports it.
//
// # Determinism
//
// Everything is sequential and seeded; no clock reaches an output. The
// simulator and the planners draw no randomness, so results depend only on
// the flags.
package claspexp
