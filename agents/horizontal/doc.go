// Package horizontal runs horizontal-scaling planners (package clasp:
// CLASP and its baselines) in the simulator as agents.HorizontalController,
// and puts CLASP, built for homogeneous serverless workers, on the
// heterogeneous edge scenarios, so that the paired evaluation can run it
// next to the vertical (per-task CPU) controllers.
//
// # What it owns
//
//   - the one adapter between package clasp and package env (Adapter): it
//     converts each step's env.Info into the planner's Observation (paper
//     Table 2; ObservationFromInfo) with the plan workers mapped onto
//     servers (AdapterConfig), and the planner's Plan into a replica plan
//     (ReplicasFromShares, QuantizeShares), or Hold; the CLASP experiments
//     (eval/claspexp) use it with the identity mapping on homogeneous
//     workers, the paired evaluation through NewEdge;
//   - the horizontal edge scenario (Counterpart): an edge scenario of env.EdgeConfig
//     (same servers, hex-grid network, application, workload and placement
//     seed) whose servers share their CPU among the replicas they host
//     (env.Config.SharedCPU), whose chained requests cost their sender CPU
//     with the paper's α = 38.5 µs, β = 275 µs, γ = 51,500 µs
//     (clasp.DefaultCostModel), and which starts from the seed's random
//     placement as one replica per task;
//   - the conversion of an env.App to a clasp.App (ClaspApp);
//   - the mapping of CLASP's plan workers onto the servers (Mapping);
//   - CLASP on an edge scenario (NewEdge): an Adapter with the mapping
//     below, fed the step's env.Info, not the observation.
//
// # The heterogeneous-server mapping
//
// CLASP's capacity model (paper Eq. 1) gives every worker one budget W, in
// µs of work per second, and every operator one execution time τ_o. The
// seven edge servers differ in core count (16–32) and per-core speed
// (1,800–3,000 MIPS). The mapping is a conservative envelope: CLASP plans as
// if every server were the weakest in both respects.
//
//   - Plan worker i runs on the i-th server ranked by processing capacity
//     ĉ (MIPS over all cores), descending; ties go to more CPU millicores,
//     then to the lower server index. CLASP numbers a plan's workers 0…n−1
//     (it keeps the lowest IDs when it scales in and adds IDs above the
//     largest when it scales out), so a plan of n workers uses the n largest
//     servers.
//   - Execution times are in µs of the slowest core (RefMIPSPerCore): task
//     k's τ_k = h_k / RefMIPSPerCore · 10⁶ (h_k in million instructions per
//     event). The simulator reports τ̄ in µs of the host's own cores; the
//     controller multiplies each report by the host's speed-up over the
//     slowest core, so CLASP sees the same τ_k on every server.
//   - The budget W is the smallest server's CPU in µs of core time per
//     second (millicores × 1,000: 16,000 millicores give W = 1.6·10⁷ µs/s).
//     α, β and γ are core time on any server, as the simulator charges them.
//
// A plan whose load L_w ≤ W under this model fits every server: a server's
// true execution work is at most CLASP's (its cores are at least as fast as
// the slowest) and its CPU at least W. The price is slack on the larger
// servers: a 32-core, 2,600 MIPS-per-core server is planned as 16 cores at
// 1,800, so CLASP fills at most about a third of it with execution work
// (28,800 of 83,200 MIPS) and half of it with request work.
//
// Capacity model. The scenario's α, β, γ and the mapped W are given to the
// planner as its estimator's fallback model, and online estimation is off
// (MinSamples is never reached): pooled recursive least squares over servers
// of different sizes would fit one W to seven, and the simulator's request
// costs are known. CLASP therefore plans with the true request costs, an
// advantage the estimator would not give it.
//
// First decision. CLASP re-plans only on its trigger, whose reference is the
// input rate at its own last plan; a random placement it did not make has
// none. The controller therefore shows CLASP no placement at its first
// decision (an initial deployment, as in package claspexp), with the first
// step's input rate (the rate a planner at the ingress sees), and the
// simulator applies that plan as a re-plan of the random placement.
//
// Demand beyond the cluster. When its packing needs more workers than there
// are servers, CLASP itself packs the demand onto all of them
// (clasp.PlaceN; loads then exceed W). A step counts as over capacity
// (Adapter.OverCapacitySteps) when the plan in force spans every server and still
// loads one beyond W, or when CLASP cannot place the demand at all
// (clasp.ErrCapacity: the destinations alone exceed a worker), in which
// case the current plan is kept.
//
// # Units
//
// As in package clasp: µs for execution and request costs, µs/s for loads
// and W, events (requests) per second for rates, seconds for time; CPU in
// millicores and processing in MIPS as in package env.
//
// # Concurrency and determinism
//
// An Adapter is used by one goroutine at a time. It draws no randomness,
// reads no clock and builds every list in task, edge or server order, so
// the same scenario and seed give the same actions, bit for bit.
package horizontal
