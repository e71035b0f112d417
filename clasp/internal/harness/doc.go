// Package harness is the test harness that stands in for the cluster when
// testing package clasp, as Nomad's scheduler tests run against a harness
// instead of a cluster. It is a fluid model of workers executing a plan
// under the capacity model of the CLASP paper (Eq. 1) with known true α, β,
// γ and W, producing clasp.Observations. It is not the project simulator
// (package env) and models no latency, no instance slots and no migration
// time.
//
// # Model
//
// Each second the cluster tries to serve the input and the planner's
// backlog, r = λ + Q_p: the offered demand (the app's nominal ratios at r,
// with the true execution times) is split over workers by the plan's shares
// and routed by clasp.Route. A worker's offered load is L_w; it can serve
// the fraction f_w = min(1, (W − γ·δ_w)/(L_w − γ·δ_w)) of its offered
// executions and requests (the destination cost γ·δ_w does not scale).
// Backpressure throttles the whole application to the bottleneck's
// f = min_w f_w: every worker executes f times its offered rates, so the
// bottleneck works exactly at W and Eq. 1 holds with equality there, and
// throughput is Λ = f·r. The rest, (1−f)·r, is the new backlog Q_p; the
// bottleneck workers report as their queue Q_w the backlog's executions
// bound for them. Plans apply instantly.
//
// Units are package clasp's: µs, µs/s, requests/s, requests, bytes.
//
// # Determinism
//
// Measurement noise (multiplicative, Gaussian, relative standard deviation
// Noise) comes from a PCG source seeded by the caller and mixed with the
// stream name "clasp/harness/noise"; no clock, no global rand, no map
// iteration. A Cluster is not safe for concurrent use.
package harness
