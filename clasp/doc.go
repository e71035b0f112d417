// Package clasp reimplements CLASP (Qi, Rodriguez & Buyya, "Chained-Request-
// Aware Scaling and Operator Placement for Serverless Stream Processing",
// arXiv 2608.29103) and its baselines as pure planners: given the current
// time and an Observation (paper Table 2) a Planner returns a Plan — per
// operator parallelism, the placement φ_{o,w} on each worker, the worker
// count, the migration plan and an explanation — and applies nothing.
//
// # What it owns
//
//   - the application model (App, Operator, Edge) and the paper's
//     applications as data (WC, SD, AA, PL, NWM, ETL, SYN);
//   - the capacity model of Eq. 1, W_w = Σ_o N_{w,o}·τ̄_{w,o} + α·R^l_w +
//     β·R^r_w + γ·δ_w ≤ W (CostModel, Loads, the routing rule Route), and
//     its online estimation by pooled recursive least squares over saturated
//     workers (Estimator);
//   - CLASP's stages, each usable alone: load derivation (Derive, s =
//     λ_p/Λ), parallelism (Parallelism), reverse-topological next-fit
//     placement with splittable demand (PlacementOrder, Place, PlaceN),
//     migration (Migrate) and re-planning triggers (Trigger);
//   - the planners: CLASP (New), FaaSFlow, Zhang24, FaaSFlow-SP and
//     Zhang24-SP (their worker counts with CLASP's placement), DS2, HPA,
//     and Gated, which puts any planner on CLASP's trigger schedule.
//
// The planner's input and output are plain data, independent of the
// simulator (package env), which later wraps a Planner as a controller.
// Subpackage internal/harness is a fluid model of workers obeying Eq. 1
// that stands in for the cluster in tests; it is not the simulator.
//
// As in Nomad's scheduler, feasibility and ranking are separate stages
// (PlacementOrder ranks operators, then each chunk is admitted only if its
// exact cost fits the worker's remaining budget; Zhang24 filters workers
// with a free slot before scoring them), per-component scores are kept for
// explanation (Plan.Explain: PlaceStep's w_rem, m_w, g_w; LoadParts; Score),
// and the current time is passed in.
//
// # Units
//
// Execution times and the costs α, β, γ in µs; loads and the budget W in µs
// of work per second (µs/s); rates (λ_p, Λ, N, R, E) in requests or
// executions per second; δ in distinct workers (per second); queues in
// requests; state and request sizes in bytes; bandwidth in bytes/s; times
// (now, pauses, durations, holds) in seconds. Shares φ are fractions of an
// operator's demand, in [0, 1], summing to 1 over workers.
//
// # Plan order and routing
//
// A plan's workers are in ascending ID order. Requests follow the routing
// rule of Route: the shares are routing weights, so a worker hosting φ_{o,w}
// of an operator sends each of its requests to the successor's instance on
// worker v with probability φ_{o_s,v} (a key-partitioned or load-balanced
// exchange). A worker keeps local only the requests whose destination
// instance it hosts itself, and every worker hosting a successor is a remote
// destination of every other worker hosting the sender. The load model, the
// packing, the -SP variants, the test harness and the simulator (env's
// default routing) all use this rule.
//
// # Concurrency and determinism
//
// A Planner is used by one goroutine at a time; distinct planners are
// independent. Planners draw no randomness, read no clock, and let no map
// iteration or goroutine order reach an output: every list is built in
// operator, edge or worker-ID order and sorted with stable sorts and explicit
// tie-breaks; floating-point sums run in a fixed order. The same sequence of
// (now, Observation) gives the same plans, bit for bit on one platform.
// Planners do not retain the Observation passed to Plan; a Plan does not
// alias it.
//
// # Errors
//
// Errors are prefixed "clasp: ". A malformed observation, application or
// configuration yields an error wrapping ErrInvalid (test with errors.Is)
// and leaves the planner's state unchanged; nothing panics on bad input. A
// demand that cannot be placed (e.g. more than MaxWorkers workers) is an
// error without ErrInvalid.
package clasp
