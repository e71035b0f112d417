// Command serve runs streamscale's services:
//
//	go run ./serve api -policies policies -addr 127.0.0.1:8080    # policy inference (serve/api)
//	go run ./serve loadgen -addr 127.0.0.1:8080 -policy pred      # load generator against api (serve/loadgen)
//	go run ./serve env -addr 127.0.0.1:8090                       # the simulator over HTTP for the Python client (serve/envserver)
//	go run ./serve planner …                                      # the live runtime's planner (serve/runtime/planner)
//	go run ./serve worker …                                       # a live runtime worker (serve/runtime/worker)
//	go run ./serve local …                                        # planner and workers in one process
//	go run ./serve cfscheck …                                     # in-process CPU enforcement against the kernel's (serve/runtime/kcfs)
//
// (and the hidden "serve taskhost", the task-host child process of
// -cpu-enforce kernel). Each subcommand's flags: go run ./serve SUB -h.
//
// main only wires signals (SIGINT, SIGTERM) to a context and runs
// serve/cli, which owns the flags and the servers' lifetimes.
package main
