// Package cli is the serve command: "serve api" runs the inference
// service (package api) behind a net/http server, "serve loadgen" runs the
// load generator (package loadgen) against it.
//
// The HTTP server binds loopback by default, bounds every connection
// (read-header 5 s, read 10 s, write 10 s, idle 60 s, 16 KiB of headers),
// starts listening before the policies are loaded (so /healthz answers and
// /readyz reports 503 meanwhile), exits 1 if the first load fails, and
// shuts down gracefully when its context ends (SIGINT or SIGTERM in main),
// letting requests in flight finish for up to -shutdown-timeout. Unless
// $GOGC is set it runs the garbage collector at GOGC=400: the live heap is
// a few MB, and the default collects about ten times a second under load.
//
// Exit codes: 0 success, 1 failure, 2 usage. Log lines go to stderr, load
// test results to stdout.
package cli
