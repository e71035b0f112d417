// Command serve is streamscale's policy inference service and its load
// generator:
//
//	go run ./serve api -policies policies -addr 127.0.0.1:8080 [-admin-token TOKEN]
//	go run ./serve loadgen -addr 127.0.0.1:8080 -policy pred -duration 10s -concurrency 32
//
// main only wires signals (SIGINT, SIGTERM) to a context and runs
// serve/cli; the service is serve/api, its client serve/client, the load
// generator serve/loadgen.
package main
