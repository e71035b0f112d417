// Package envserver serves streamscale's simulator (package env) as remote
// Gymnasium environments: create, reset, step and close single
// environments or vectors of them over HTTP, so that Python trainers
// (Stable-Baselines3, CleanRL, RLlib; python/streamscale_env) can use it.
//
// # Protocol
//
//	GET    /v1/healthz          → JSON Stats (occupancy and limits)
//	POST   /v1/envs             JSON CreateRequest → JSON CreateResponse (id, spaces, …)
//	POST   /v1/envs/{id}/reset  JSON ResetRequest {"seed": s} → binary
//	POST   /v1/envs/{id}/step   binary action → binary
//	DELETE /v1/envs/{id}        → JSON {"closed": id}
//	GET    /v1/stream           Upgrade: streamscale-env.v1 → 101, then frames (below)
//
// Observations and actions travel in a binary encoding; JSON carries only
// metadata. A binary body is a sequence of sections, each
// kind (1 byte) | n (uint32 little-endian) | n elements little-endian, of
// kind 'f' float32, 'd' float64, 'i' int64, 'b' bool byte (0 or 1) or 'j'
// JSON (n bytes). An observation is flattened in the Dict's key order
// (app, server, task; row-major) and sent as float32, the dtype of the
// Python spaces (the float64 value rounded to nearest, so bounds hold).
// Rewards are float64, exactly the env's.
//
//	step body (client → server): 'i' n_envs×n_tasks choices in 0..4
//	single reset:  'f' obs, 'j' info
//	single step:   'f' obs, 'd' [reward], 'b' [terminated, truncated], 'j' info
//	vector reset:  'f' N×obs, infos
//	vector step:   'f' N×obs, 'd' N rewards, 'b' 3N (terminated, truncated,
//	               ended), 'f' final obs of the K ended envs in env order,
//	               infos
//
// A single env's info is a JSON object: step, seed, the float keys
// offered_rate, next_offered_rate, throughput, sink_events (events/s),
// p95_ms, mean_ms, total_cpu, in_flight, the reward terms reward_slo …
// reward_total (env.RewardTerms), the booleans completed and violated,
// and applied (millicores per task). A vector's infos carry the same keys
// for every env, in binary (CreateResponse.InfoLayout names the rows):
// 'd' float keys × N (row-major: key r of env i at r·N+i) ending with
// episode_return, 'i' [step, seed (uint64 bits), episode_length] × N,
// 'b' [completed, violated] × N, 'd' N × tasks applied. episode_return
// and episode_length are those of the episode env i ended in this step,
// 0 where none ended (and after a reset). A vector reset's infos are the
// single env's reset info of each env (step −1, its episode seed
// env.VecSeed(seed, i, 0), …).
//
// Errors are JSON {"error": message, "code": code} with a status:
// 400 malformed_body, bad_action, bad_request; 404 unknown_env (no such
// env on this connection); 410 closed (closed, or freed after the idle
// timeout, earlier on this connection); 409 not_reset, episode_over; 413
// body_too_large; 429 too_many_envs. A refused request changes nothing:
// actions are decoded and checked (shape and range) before any env moves.
//
// A vector of N envs steps them in one call, in parallel (env.VecEnv).
// Its autoreset is Gymnasium's next-step by default (the step that ends an
// episode returns its final observation, also sent among the final
// observations; the next step resets that env and ignores its action) or
// same-step on request (the ended env restarts inside the step; the final
// observation is only among the final observations).
//
// # Frames (the fast path)
//
// GET /v1/stream with "Connection: Upgrade" and "Upgrade:
// streamscale-env.v1" (StreamProtocol; the version is in the token, and
// a request without it gets 426 upgrade_required naming it) answers 101
// Switching Protocols and turns the HTTP/1.1 connection into a stream of
// frames, one response per request, in order:
//
//	request:  op (1 byte) | id (uint64 LE) | n (uint32 LE) | n payload bytes
//	response: status (uint16 LE) | n (uint32 LE) | n body bytes
//
// op is 'C' create (id 0, JSON CreateRequest → JSON CreateResponse), 'R'
// reset (JSON ResetRequest → binary), 'S' step (binary action → binary)
// or 'D' close (no payload → JSON {"closed": id}); bodies, statuses and
// error JSON are exactly those of the HTTP routes, so a client decodes
// one format. A step is then one read and one write on each side (the
// response's header and body copied into one buffer), with no request
// line, headers or per-request net/http work. The connection
// keeps its number: envs created over it before the upgrade stay its
// own, and all go when it closes (or idles IdleTimeout between frames).
// A bad frame gets its error response and the stream goes on (nothing
// changed), except one whose payload exceeds its limit by more than the
// 256 KiB a stream reads to skip it: that is answered and the stream
// closed. http.Server.Shutdown does not track upgraded connections;
// Server.CloseStreams ends them.
//
// # Transport
//
// Plain HTTP/1.1 with keep-alive, and cleartext HTTP/2 (h2c) on the same
// port through net/http's own Server.Protocols (Go ≥ 1.24; no extra
// module). Not gRPC: Python's standard library speaks HTTP/1.1 and nothing
// else, no package index is reachable here to install grpcio, and gRPC
// would add a code generator and a large module for a five-route protocol
// whose bodies are already flat little-endian arrays. One request per step
// of a vector amortizes the round trip over its N envs. Every response
// carries a Content-Length (never chunked), so a client's framing is one
// header read and one body read.
//
// # Ownership and limits
//
// An instance belongs to the client connection that created it
// (Server.Configure installs the http.Server hooks that track
// connections): its id is that connection's own (1, 2, … in creation
// order), a request over any other connection naming it gets 404
// unknown_env, and when the connection closes — a DELETE never sent, a
// client that crashed — the server frees all its instances at once. So a
// client cannot reach another's envs by guessing ids, and a dead client's
// envs do not hold the limits until a timeout. A client that loses its
// connection has lost its envs and creates new ones (python/streamscale_env
// raises rather than retrying over a new connection). The http.Server
// closes a connection idle for IdleTimeout (serve env), which frees its
// envs; Run's Sweep of instances idle that long stays as a backstop. A
// refused request keeps the connection (an oversized body is refused
// without net/http's connection-closing MaxBytesReader), except one whose
// unread rest exceeds the 256 KiB net/http discards: that connection
// closes, and its envs go with it.
//
// MaxEnvs (default 64, at most MaxEnvsLimit = 1024) bounds the simulator
// envs alive in total and MaxEnvsPerConn (default min(32, MaxEnvs)) those
// of one connection (a vector of N counts N). JSON bodies are capped at
// MaxJSONBytes and a step body at its exact size; a JSON body naming a
// key twice (compared as encoding/json matches fields, case-folded) is
// refused with bad_request naming the key, as are unknown keys and
// trailing data. Only named traces are served (no file is read on a
// client's behalf).
//
// # Concurrency and determinism
//
// A Server is safe for concurrent use: the registry has one mutex, each
// instance another, so requests on one instance run one at a time and
// requests on different instances in parallel. The envs are env's
// deterministic state machines: the same create and reset requests and the
// same actions give the same bytes, equal to what a local env.Env gives
// (float32 observations rounded from the env's, rewards bit for bit). The
// server's clock only drives the idle timeout (Config.Now).
package envserver
