// Package vrebalance is the VRebalance baseline of the EdgeStreamPy paper
// (VRebalance, Kang et al., reimplemented for the simulator): a Bayesian
// optimizer (package bo, GP with GP-Hedge) scores allocation vectors by
// application p95 latency and allocated CPU, one optimizer and history per
// workload tier chosen by sink throughput, evaluated once every 60 steps
// after holding the first allocation for 60 steps. Every design choice
// where the paper is silent is documented on Config.
//
// Units, concurrency and determinism follow package agents: allocations in
// millicores, one Act per simulated second, one goroutine per controller,
// randomness only from the Reset seed (streams "agents/vrebalance/tier<i>").
package vrebalance
