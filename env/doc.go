// Package env is streamscale's stream-processing simulator and its
// Gymnasium-style environment.
//
// # What it owns
//
// A scenario (Config) is data: an application DAG (App: tasks with MIPS
// demand per event h_k, selectivity, output event size and memory; edges;
// sources and sinks; an SLO on p95 end-to-end latency), an undirected
// network of switches and links (default: a 3×3 hexagonal grid, 16 links of
// 1 Gbps and 10 ms), heterogeneous edge servers (CPU capacity c_i in
// millicores, processing capacity ĉ_i in MIPS, RAM), a placement of tasks
// on servers and a workload (events/s per step). The RIoTBench PRED and ETL
// profiles and their calibration live in app.go.
//
// Physics. A task k on server i with CPU allocation c_k processes
// σ = ĉ_i·c_k/c_i MIPS (EdgeStreamPy, Eq. 1), i.e. one event every
// s_k = h_k/σ seconds, FIFO. Every output event of a task goes to every
// successor; an edge between tasks on different servers is a network flow
// routed along a minimum-hop path (ties broken by switch id), transmitted
// at the flow's max-min fair share of its links and delayed by the links'
// propagation. Same-server edges are local (no delay). Sources emit at the
// workload rate; events delivered by sink tasks record their end-to-end
// latency (delivery time − emission time). Queues are unbounded and carry
// over between steps; nothing is dropped.
//
// Time. One Step is one simulated second. The fast core (Fluid) moves
// cohorts of events ("pieces", SlicesPerStep per second from each source)
// whose first and last events are timed exactly under deterministic FIFO
// service, splits a cohort that is in service at the end of a step, and
// merges overlapping arrivals at tasks with several inputs by the fluid
// queue's virtual waiting time. Its cost per step does not depend on the
// event rate. The PerEvent core simulates every event and is the reference
// the fast core is tested against (TestFluidMatchesPerEvent).
//
// Horizontal scenarios. Config.Replicas runs a task as several replicas,
// Config.Requests charges chained requests to their sender (CLASP Eq. 1)
// and Config.SharedCPU makes each server's CPU a pool its replicas share.
// Config.Worker (WorkerPhysics, off by default; PaperWorkers gives the CLASP
// paper's values) replaces processor sharing by the serverless worker of
// the CLASP evaluation: executions at full core speed in executor slots
// behind a serial dispatch path of the server's CPU, an RPC latency per
// remote hop and timer batching of inputs and remote requests.
//
// Environment. Reset/Step follow Gymnasium: Dict observations (app,
// server, task Boxes: 11, 5 per server and 15 per task features, paper
// Table 1, normalized in obs.go and built by ObsBuilder from an interval's
// measurements, which a real deployment's observer uses too), a MultiDiscrete action of 5 choices per
// task ({−500, −50, 0, +50, +500} millicores), a seven-term reward
// (reward.go) and truncation at the end of the trace; terminated is always
// false. Allocations are clipped to [MinCPU, MaxCPU] and projected onto
// server capacity (reductions first, then increases in task order). One
// entry point, Step(Action), takes every kind of action (MultiDiscrete
// choices, target allocations, replica plans, Hold) and returns a
// StepResult; Info reports the replica plan in force and the offered rate
// the next step will see, and Config.Spaces describes the spaces without
// building an Env. VecEnv runs many environments in parallel with
// autoreset.
//
// Physics. Config.Physics (physics.go) holds the stochastic and
// real-system options, ScenarioPhysics the presets "paper" (all off) and
// "realistic"; Config.Randomize draws some of them anew at every Reset
// (domain.go). A scenario file (scenariofile.go: ParseScenario,
// ResolveScenario, Scenario.Apply) is a preset with any Physics field
// overridden and, optionally, measured per-task demands; env decodes it
// from bytes and never opens files itself. Under stochastic physics the fast core keeps the fluid for
// the mass and samples latencies with a tracer (tracer.go); the per-event
// core simulates the same options event by event (reference.go). A task
// may gather the fan-out of an upstream task (Task.JoinOf, a fork-join:
// ETL's Join collects the ten fields SenMLParse splits a message into);
// both of those cores then give a message the latency of its slowest
// sibling, while the deterministic fluid carries the join's mass by its
// selectivity.
//
// # Units
//
// Time in seconds inside the simulator and milliseconds in Info and in the
// SLO; CPU in millicores; processing in MIPS and million instructions per
// event; rates in events per second; bandwidth in bits per second.
//
// # Concurrency and determinism
//
// An Env is a deterministic state machine: no clock, no goroutines, no I/O,
// no map iteration reaching results, floats reduced in a fixed order. It is
// not safe for concurrent use. VecEnv steps each Env on exactly one
// goroutine per step, so its results do not depend on scheduling. Named
// random streams (package rng) derive all randomness from one root seed;
// the simulator itself uses randomness only for random placements.
// Observations and Infos returned by Reset and Step are buffers owned by the
// Env, valid until the next call.
package env
