package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"streamscale/agents"
	"streamscale/env"
)

// Spec is one episode to run.
type Spec struct {
	Profile       string       // application profile, "pred" or "etl"
	TraceName     string       // label of Workload, recorded in the result
	Workload      env.Workload // arrival rates; read only
	PlacementSeed uint64       // seed of the random task placement
	Seed          uint64       // episode seed, given to the env's and the controller's Reset
	Steps         int          // intervals to run; 0 means Workload.Len()
	Controller    Factory      // controller to build for the scenario
}

// Factory builds a controller for a scenario: what the runner needs of a
// controller spec (eval/controllers' registry returns them; tests may
// write their own).
type Factory interface {
	// String is the canonical spec recorded in results, e.g. "static:2000".
	String() string
	// Horizontal reports whether the controller re-plans replicas on a
	// horizontal scenario of its own.
	Horizontal() bool
	// Scenario returns the scenario the controller runs on, given the
	// edge scenario base.
	Scenario(base env.Config) (env.Config, error)
	// Build returns a fresh controller for scenario (from Scenario).
	Build(scenario env.Config) (agents.Actor, error)
}

// Interval is what one one-second interval recorded.
type Interval struct {
	Step       int             // 0-based interval index
	Offered    float64         // events/s entering the sources
	Throughput float64         // sink deliveries per second, source-message equivalents
	SinkEvents float64         // events delivered to the sink
	P95MS      float64         // p95 end-to-end latency, ms
	MeanMS     float64         // mean end-to-end latency, ms
	Violated   bool            // P95MS > SLO
	TotalCPU   float64         // Σ applied allocation, millicores
	InFlight   float64         // events on links
	Reward     env.RewardTerms // the seven reward terms and their clipped total
	Applied    []float64       // applied allocation per task, millicores
	Queue      []float64       // events waiting per task

	ReservedCPU   float64 // CPU the controller held during the interval, millicores (see Footprint)
	ActiveServers int     // servers hosting a task replica with CPU > 0 (see Footprint)
	Replanned     bool    // the action was a replica plan
	OverCapacity  bool    // the controller found the demand beyond the whole cluster (horizontal controllers)
}

// Summary holds an episode's means over its intervals.
type Summary struct {
	Steps          int     // intervals run
	ViolationRate  float64 // share of intervals with p95 > SLO, [0, 1]
	MeanP95MS      float64 // mean of the per-interval p95, ms
	MeanLatencyMS  float64 // mean of the per-interval mean latency, ms
	MeanCPU        float64 // mean total applied CPU, millicores
	MeanThroughput float64 // mean throughput, messages/s
	MeanOffered    float64 // mean offered load, messages/s
	MeanReward     float64 // mean reward per interval
	TotalReward    float64 // undiscounted return

	MeanReservedCPU   float64 // mean reserved CPU, millicores
	MeanActiveServers float64 // mean number of active servers
	Replans           int     // intervals whose action was a replica plan
	OverCapacitySteps int     // intervals whose demand the controller found beyond the cluster
}

// Result is one finished episode.
type Result struct {
	Profile          string
	Trace            string
	PlacementSeed    uint64
	Seed             uint64
	Controller       string   // canonical controller spec
	Horizontal       bool     // the controller re-plans replicas on the horizontal scenario
	SLOMS            float64  // the application's SLO on p95 latency, ms
	Tasks            []string // task names, in action order
	Placement        []int    // server index of each task (the initial replica of a horizontal run)
	ConfigSHA256     string   // hash of the scenario (see ConfigHash)
	TrajectorySHA256 string   // hash of every interval (see package doc)
	Summary          Summary
	Intervals        []Interval
}

// Scenario builds the env configuration a Spec runs: the edge scenario of
// its profile, placement seed and workload, or, for a horizontal
// controller, that scenario's horizontal counterpart (Controller.Scenario;
// without a Controller, the edge scenario).
func Scenario(s Spec) (env.Config, error) {
	if s.Workload == nil {
		return env.Config{}, errors.New("eval: no workload")
	}
	if s.Steps < 0 {
		return env.Config{}, fmt.Errorf("eval: steps %d, want ≥ 0", s.Steps)
	}
	cfg, err := env.Scenario(s.Profile, s.PlacementSeed, s.Workload)
	if err != nil {
		return env.Config{}, fmt.Errorf("eval: %w", err)
	}
	cfg.Steps = s.Steps
	if s.Controller == nil { // the edge scenario itself
		return cfg, nil
	}
	return s.Controller.Scenario(cfg)
}

// Run runs the episode s describes through agents.RunEpisode (which
// checks ctx every 256 intervals).
func Run(ctx context.Context, s Spec) (Result, error) {
	cfg, err := Scenario(s)
	if err != nil {
		return Result{}, err
	}
	e, err := env.New(cfg)
	if err != nil {
		return Result{}, fmt.Errorf("eval: %s placement %d: %w", s.Profile, s.PlacementSeed, err)
	}
	cfg = e.Config()
	ctrl, err := s.Controller.Build(cfg)
	if err != nil {
		return Result{}, err
	}
	cfgHash, err := ConfigHash(cfg)
	if err != nil {
		return Result{}, err
	}
	res := Result{
		Profile: s.Profile, Trace: s.TraceName, PlacementSeed: s.PlacementSeed, Seed: s.Seed,
		Controller: s.Controller.String(), Horizontal: s.Controller.Horizontal(), SLOMS: e.SLOMS(),
		Placement: append([]int(nil), cfg.Placement...), ConfigSHA256: cfgHash,
	}
	for _, t := range cfg.App.Tasks {
		res.Tasks = append(res.Tasks, t.Name)
	}
	n := e.NumTasks()
	res.Intervals = make([]Interval, 0, cfg.Steps)
	// One backing array per slice kind keeps the allocations few.
	applied := make([]float64, cfg.Steps*n)
	queue := make([]float64, cfg.Steps*n)
	err = agents.RunEpisode(ctx, e, ctrl, s.Seed, func(st *agents.Step) error {
		t, info := st.T, &st.Info
		if t >= cfg.Steps {
			return fmt.Errorf("eval: episode longer than %d intervals", cfg.Steps)
		}
		iv := Interval{
			Step: info.Step, Offered: info.OfferedRate, Throughput: info.Throughput, SinkEvents: info.SinkEvents,
			P95MS: info.P95MS, MeanMS: info.MeanMS, Violated: info.Violated, TotalCPU: info.TotalCPU,
			InFlight: info.InFlight, Reward: info.Reward,
			Applied: applied[t*n : (t+1)*n : (t+1)*n], Queue: queue[t*n : (t+1)*n : (t+1)*n],
			Replanned: st.Action.Replicas != nil, OverCapacity: st.OverCapacity,
		}
		iv.ReservedCPU, iv.ActiveServers = Footprint(cfg.Servers, cfg.SharedCPU, info.Plan, info.Applied)
		copy(iv.Applied, info.Applied)
		copy(iv.Queue, info.Queue)
		res.Intervals = append(res.Intervals, iv)
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("eval: controller %s: %w", res.Controller, err)
	}
	if len(res.Intervals) != cfg.Steps {
		return Result{}, fmt.Errorf("eval: episode truncated after %d of %d intervals", len(res.Intervals), cfg.Steps)
	}
	res.Summary = Summarize(res.Intervals)
	res.TrajectorySHA256 = TrajectoryHash(res.Intervals)
	return res, nil
}

// Footprint returns what an interval held of the cluster under the replica
// plan (plan[k] lists task k's replicas) and the applied per-task
// allocations (millicores):
//
//   - reserved CPU, millicores: with per-task reservations (shared false)
//     Σ_k applied[k], the CPU set aside for the tasks whatever they use;
//     with shared CPU, Σ CPU of the active servers, since a server then
//     gives its whole CPU to the replicas it hosts;
//   - active servers: the servers hosting at least one replica with CPU > 0
//     (applied[k]·share > 0 with reservations; share > 0 with shared CPU,
//     where every replica with a share gets part of its server).
func Footprint(servers []env.Server, shared bool, plan [][]env.Replica, applied []float64) (reservedMC float64, active int) {
	on := make([]bool, len(servers))
	for k, rs := range plan {
		for _, r := range rs {
			if r.Share > 0 && (shared || applied[k]*r.Share > 0) {
				on[r.Server] = true
			}
		}
	}
	for i, b := range on {
		if b {
			active++
			if shared {
				reservedMC += servers[i].CPU
			}
		}
	}
	if !shared {
		for _, a := range applied {
			reservedMC += a
		}
	}
	return reservedMC, active
}

// Summarize returns the means of intervals, summed in order. An empty
// slice gives a zero Summary.
func Summarize(intervals []Interval) Summary {
	var s Summary
	s.Steps = len(intervals)
	if s.Steps == 0 {
		return s
	}
	viol := 0
	for _, iv := range intervals {
		if iv.Violated {
			viol++
		}
		s.MeanP95MS += iv.P95MS
		s.MeanLatencyMS += iv.MeanMS
		s.MeanCPU += iv.TotalCPU
		s.MeanThroughput += iv.Throughput
		s.MeanOffered += iv.Offered
		s.TotalReward += iv.Reward.Total
		s.MeanReservedCPU += iv.ReservedCPU
		s.MeanActiveServers += float64(iv.ActiveServers)
		if iv.Replanned {
			s.Replans++
		}
		if iv.OverCapacity {
			s.OverCapacitySteps++
		}
	}
	n := float64(s.Steps)
	s.ViolationRate = float64(viol) / n
	s.MeanP95MS /= n
	s.MeanLatencyMS /= n
	s.MeanCPU /= n
	s.MeanThroughput /= n
	s.MeanOffered /= n
	s.MeanReward = s.TotalReward / n
	s.MeanReservedCPU /= n
	s.MeanActiveServers /= n
	return s
}

// TrajectoryHash returns the hex SHA-256 of intervals, each encoded as
// little-endian 64-bit words in this order: step; the IEEE-754 bits of
// offered, throughput, sink events, p95, mean latency; violated (0 or 1);
// total CPU, in flight; the reward terms SLO, risk, resource, progress,
// churn, recovery, reconf and total; the task count; the applied
// allocations; the queues; reserved CPU; active servers; replanned and
// over capacity (0 or 1).
func TrajectoryHash(intervals []Interval) string {
	h := sha256.New()
	var buf []byte
	for _, iv := range intervals {
		buf = buf[:0]
		u := func(x uint64) { buf = binary.LittleEndian.AppendUint64(buf, x) }
		f := func(x float64) { u(math.Float64bits(x)) }
		b := func(x bool) {
			if x {
				u(1)
			} else {
				u(0)
			}
		}
		u(uint64(iv.Step))
		f(iv.Offered)
		f(iv.Throughput)
		f(iv.SinkEvents)
		f(iv.P95MS)
		f(iv.MeanMS)
		b(iv.Violated)
		f(iv.TotalCPU)
		f(iv.InFlight)
		r := iv.Reward
		for _, x := range [...]float64{r.SLO, r.Risk, r.Resource, r.Progress, r.Churn, r.Recovery, r.Reconf, r.Total} {
			f(x)
		}
		u(uint64(len(iv.Applied)))
		for _, x := range iv.Applied {
			f(x)
		}
		for _, x := range iv.Queue {
			f(x)
		}
		f(iv.ReservedCPU)
		u(uint64(iv.ActiveServers))
		b(iv.Replanned)
		b(iv.OverCapacity)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ConfigHash returns the hex SHA-256 of a scenario: the JSON encoding of
// cfg without its workload, followed by the IEEE-754 bits of the
// workload's rates for the steps the episode replays.
func ConfigHash(cfg env.Config) (string, error) {
	w := cfg.Workload
	cfg.Workload = nil
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("eval: encoding config: %w", err)
	}
	h := sha256.New()
	h.Write(b)
	if w != nil {
		var buf [8]byte
		for t := 0; t < cfg.Steps; t++ {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(w.Rate((cfg.StartOffset+t)%w.Len())))
			h.Write(buf[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
