// Package calibrate measures the live runtime for `eval calibrate` and
// turns the measurements into a scenario file for the simulator.
//
// It owns the probes and the fits. Probe runs a Plan: for pred and etl a
// step probe (StepController: every task at Plan.HighMC, then at LowMC
// half way) on a constant input rate, read by a Recorder (per-operator CPU
// per event, delays, reported quotas, the actuation delay and the quota
// enforcement), one probe per further hop rate (the hop curve), CLASP's
// cost-model microbenchmarks (ProbeCosts, fitted term by term by
// FitCostModel: α, β, γ of Eq. 1 in µs, W in µs/s) and the in-process
// service times (ServiceTimes); for a CLASP application the cost-model
// probe and the service times only. Derive computes the derived values
// (the hops after every task, HopsAfter; the methods; the hop spreads,
// fitted by simulating the probe) and renders scenario.json,
// calibration.json and calibration.md; Parse reads a calibration.json back
// (`eval calibrate -from`). The command does the flags, the files and the
// host-load readings.
//
// Units: rates in inputs/s of wall time; CPU in µs per event (per
// execution); latencies and delays in ms; allocations in scenario
// millicores, CPUScale live millicores per scenario millicore; the cost
// model's α, β, γ in µs and W in µs/s.
//
// Determinism: the probes are not reproducible (real time and the
// machine's load; the layouts' order and the input source come from the
// seed). Everything after the measurements is: Derive, Parse, the fits
// and the renderings are functions of their inputs (the spread fits
// simulate with the calibration's seed), so a recorded calibration.json
// derives to the same bytes every time.
//
// Concurrency: Probe runs its probes one after the other and stops every
// process it starts before it returns (also when ctx ends); a Recorder's
// Tap is called from one goroutine (live.Config.Tap). Derive and Parse
// keep no state.
package calibrate
