// Package api is streamscale's HTTP inference service: it loads the PPO
// policy artifacts of a directory and serves their actions over a gin
// router, on its own v1 routes and on the Open Inference Protocol's
// (KServe V2) REST routes.
//
// # Policies
//
// With a manifest (<Dir>/manifest.json, package policyset) the server
// serves every model the manifest lists: <Dir>/<set>/<profile>/policy.*,
// named <profile> for the set "default" and <set>-<profile> otherwise
// (pred, paper-pred, calibrated-etl); a listed policy that is missing, or
// whose card names another profile, fails the load. Without one it serves
// every <Dir>/<name>/ holding a policy.json, as <name>. Card and weights
// are read as regular files within policy.MaxCardBytes (1 MiB) and
// policy.MaxWeightsBytes (64 MiB), the manifest within
// policyset.MaxManifestBytes (1 MiB); a policy with a non-finite weight
// or output is refused at load (policy.Load).
//
// # Routes
//
//	GET  /healthz                       process alive
//	GET  /readyz                        200 once every policy loaded and passed its self-test, 503 before and while draining (Drain)
//	GET  /metrics                       Prometheus exposition (client_golang, private registry, Go and process collectors)
//	GET  /openapi.json                  the OpenAPI 3 document of these routes (openapi.json, embedded)
//	GET  /v1/policies                   name, version (weights SHA-256), profile, observation layout, nvec, deltas (or target utilizations, or a residual policy's choices and residual record)
//	POST /v1/policies/{name}/act        one observation[, rule_targets] → action, deltas (or target_utilization, or choices and targets), value[, probabilities]
//	POST /v1/policies/{name}/act/batch  up to Config.MaxBatch observations, results in the same order
//	POST /admin/reload                  re-read the directory (bearer token; absent without Config.AdminToken)
//
//	GET  /v2                                   Open Inference Protocol server metadata
//	GET  /v2/health/live                       200, empty body
//	GET  /v2/health/ready                      200 as /readyz, else 400 (the protocol's "4xx is false"), empty body
//	GET  /v2/models/{name}[/versions/{v}]      model metadata: name, versions (weights SHA-256), platform, input and output tensors
//	GET  /v2/models/{name}[/versions/{v}]/ready  200, 400 before the load or while draining, 404 for an unknown model or version
//	POST /v2/models/{name}[/versions/{v}]/infer  inputs app, server, task (FP32, [batch, …Box shape])[, rule_targets] → action (INT64), value (FP32)[, targets (FP64)]
//
// The v2 routes are described in v2.go; their errors are {"error": …}
// only, and a value that does not fit the policy is a 400 there (422 on v1).
//
// Every GET route answers HEAD as well.
//
// # Requests and their errors
//
// An act body is {"observation": {"app": […], "server": […], "task": […]}}
// plus options "deterministic" (default true), "sample" with a "seed",
// and "probabilities". Each vector is the row-major flattening of its
// Box (task: tasks×15, server: servers×5, app: 11) and is checked against
// the Box's bounds. The decoder (decode.go) is a single-pass scanner of
// exactly this schema; it is fuzzed (FuzzDecodeAct) against encoding/json.
// Every refusal is {"error": "api: …", "field": "<JSON path>"} and changes
// nothing:
//
//	400 malformed JSON, trailing data, a value of the wrong JSON type (so
//	    "NaN" or "Infinity" as strings), unknown or duplicate keys, missing
//	    keys, conflicting options, a seed without sampling or sampling
//	    without a seed
//	413 a body over Config.MaxBodyBytes (1 MiB) or a batch over MaxBatch (256)
//	415 a Content-Type other than application/json, a charset other than
//	    utf-8, or a Content-Encoding other than identity
//	422 a vector of the wrong length, a number that overflows float64, a
//	    value outside its declared [low, high] (rejected, not clipped: the
//	    policy never saw such inputs, and clipping would hide a client's
//	    unit or layout error), an empty batch
//	404 unknown policy or route; 405 (with Allow) for a route's wrong method
//	401 admin route without the token; 503 before the first load
//	500 a recovered panic (never expected) or a failed reload
//
// # Residual policies
//
// A residual policy (agents/residual; its card's Residual) corrects the
// targets of a base rule (e.g. threshold:measured:…) instead of acting on
// the action space: per task one of follow, x0.85, x1.15, x1.35 or hold.
// The rule keeps memory (a scale-down window, the allocations it has
// shown), which a stateless endpoint cannot hold, so the client runs the
// rule (the spec GET /v1/policies gives as residual.base, built for its
// scenario and Reset per episode) and sends its targets with every
// observation as "rule_targets": one finite number per task in
// [0, 1e9] millicores (in a batch, one such array per observation; on
// the v2 route, an input tensor rule_targets [batch, tasks]). The server
// appends residual.AppendFeatures of them to the flat observation, runs
// the policy, and answers the choices by name ("choices" in place of
// "deltas") and the corrected targets ("targets", millicores:
// residual.Apply, clipped to the card's [min_cpu, max_cpu]; the v2 output
// targets, FP64). A residual policy's request without rule_targets is a
// 400, and so is one for any other policy that carries them; a wrong
// length or a target out of range is a 422 (400 on v2), as for an
// observation vector. The v1 answer equals what policy.NewResidualController
// does in the simulator for the same observation and rule state.
//
// # Inference
//
// Actions come from policy.Policy.Step on a clone of the policy taken from a
// per-policy sync.Pool (a Policy is not safe for concurrent use), so the
// response equals Policy.Act bit for bit. Concurrent deterministic
// single-observation requests are combined into one batched pass
// (combine.go: the policy's kernel costs the same for 1 row as for 6, and
// rows do not interact). Deterministic mode is the
// per-dimension argmax; sample mode draws from ppo's "ppo/action" stream
// seeded with the request's seed, observation after observation, so it
// reproduces a policy.Controller after Reset(seed). Probabilities come from
// the policy's own log-probabilities (see entry.probabilities). Request
// buffers (body, decoded observations, outputs, response) live in a pooled
// scratch: once warm, the act path allocates nothing, gin included
// (TestActDoesNotAllocate).
//
// # Concurrency
//
// The policy set is an immutable registry behind an atomic.Pointer;
// Reload builds and self-tests a complete new set before swapping it in,
// and a failed reload keeps the old one. Metrics are atomic counters and
// pre-resolved client_golang children. InstrumentServer wraps the
// listener to count connections and the requests net/http answers itself
// before routing (400, 431, 505, …), which no handler sees.
// Units: latencies in seconds in /metrics, action deltas in millicores.
//
// gin is used only here; New switches gin to release mode (a process-wide
// setting) and installs no request logger.
package api
