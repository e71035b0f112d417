// Package loadgen is a closed-loop HTTP load generator for the inference
// service: Concurrency workers, each on one keep-alive connection, send the
// same act request back to back for a fixed duration (after a warm-up that
// is not measured) and record every latency.
//
// Bounds: loopback addresses only (a load generator must not be pointed at
// someone else's server); Duration ≤ 10 min, Warmup ≤ 1 min,
// Concurrency ≤ 256, optional MaxRequests. The request body is fixed, by
// default a real observation of the policy's profile from the simulator.
//
// The HTTP/1.1 client is minimal (a prepared request, responses read with
// Content-Length) so that its own CPU cost, on a machine it shares with
// the server, stays small. Latency is from the request's first byte
// written to the response's last byte read, kept in a log-linear
// histogram with buckets under 1% wide (percentiles are bucket upper
// bounds; Max is exact). Units: durations, requests per second.
package loadgen
