// Package cli is the serve command: "serve api" runs the inference
// service (package api) behind a net/http server, "serve loadgen" runs the
// load generator (package loadgen) against it, "serve env" serves the
// simulator to the Python client (package envserver), and "serve
// planner", "serve worker" and "serve local" run the live runtime
// (serve/runtime: its planner, a worker, or both in one process).
//
// The HTTP server binds loopback by default, bounds every connection
// (read-header 5 s, read 10 s, write 10 s, idle 60 s, 16 KiB of headers)
// and their number (-max-conns, default 1024; at the cap the connection
// idle longest is closed for a newcomer, and -health-conns, default 8,
// more connections answer /healthz, /readyz and /v2/health/* at once while
// their other requests wait up to 5 s for a slot, then 503; beyond those,
// connections wait in the kernel's accept queue: connlimit.go), starts listening before the policies
// are loaded (so /healthz answers and /readyz reports 503 meanwhile), and
// exits 1 if the first load fails. When its context ends (SIGINT or
// SIGTERM in main) it shuts down gracefully: /readyz turns 503 at once
// while every route keeps serving for -drain-delay (default 2 s; responses
// then say Connection: close), so that load balancers take it out; then
// it accepts the connections waiting in the kernel's accept queue, closes
// the listener, waits until every connection has sent its first request
// (or closed; at most the 5 s read-header timeout), and requests in flight
// may finish for up to -shutdown-timeout (default 10 s); then it exits 0.
// So a request sent before the drain ended is answered, however late the
// process gets the CPU to accept and read it (drain.go). Unless $GOGC is set it
// runs the garbage collector at GOGC=400 (the live heap is a few MB, and
// the default collects about ten times a second under load), always with
// a soft memory limit (-memory-limit, default 256 MiB, unless $GOMEMLIMIT
// is set); admin reloads are rate-limited (-reload-interval, default 1 s).
//
// "serve cfscheck" measures the runtime's in-process CPU enforcement
// against the kernel's (package kcfs); "serve taskhost", not listed in the
// usage, is the task-host child process that serve worker -cpu-enforce
// kernel and serve cfscheck start.
//
// Main has the shape of every streamscale command (internal/command):
// subcommands through command.Dispatch, -h on each, usage errors on one
// line naming the flag. Exit codes: 0 success (or -h), 1 failure, 2 usage. Log lines go to stderr, load
// test results to stdout.
package cli
