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
	"reflect"

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
	// Physics are the simulator's stochastic and real-system options
	// (env.Config.Physics; zero: the deterministic physics), and Scenario
	// the preset name they came from (env.ScenarioPhysics), recorded in
	// the result; "" when the physics are not a preset's.
	Physics  env.Physics
	Scenario string
	// Demand, if not nil, replaces the profile's task demands with
	// measured ones (a scenario file's, env.ScenarioDemand), on the
	// placement's servers.
	Demand *env.ScenarioDemand
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
	// Config returns the scenario the controller runs on, given the
	// edge scenario base.
	Config(base env.Config) (env.Config, error)
	// Build returns a fresh controller for scenario (from Config).
	Build(scenario env.Config) (agents.Actor, error)
}

// Interval is one one-second interval of a run: the run record. Its tags
// name the JSON keys and the Parquet columns (intervals.parquet, `eval run
// -out`), and TrajectoryHash encodes its fields in declaration order, so a
// new per-interval metric is one new field here.
type Interval struct {
	Step           int64     `json:"step" parquet:"step"`                       // 0-based interval index
	Offered        float64   `json:"offered" parquet:"offered"`                 // events/s entering the sources
	Throughput     float64   `json:"throughput" parquet:"throughput"`           // sink deliveries per second, source-message equivalents
	SinkEvents     float64   `json:"sink_events" parquet:"sink_events"`         // events delivered to the sink
	P95MS          float64   `json:"p95_ms" parquet:"p95_ms"`                   // p95 end-to-end latency, ms
	MeanMS         float64   `json:"mean_ms" parquet:"mean_ms"`                 // mean end-to-end latency, ms
	Violated       bool      `json:"violated" parquet:"violated"`               // P95MS > SLO
	TotalCPU       float64   `json:"total_cpu" parquet:"total_cpu"`             // Σ applied allocation, millicores
	InFlight       float64   `json:"in_flight" parquet:"in_flight"`             // events on links
	Reward         float64   `json:"reward" parquet:"reward"`                   // the clipped total reward
	RewardSLO      float64   `json:"reward_slo" parquet:"reward_slo"`           // the seven terms (env.RewardTerms)
	RewardRisk     float64   `json:"reward_risk" parquet:"reward_risk"`         //
	RewardResource float64   `json:"reward_resource" parquet:"reward_resource"` //
	RewardProgress float64   `json:"reward_progress" parquet:"reward_progress"` //
	RewardChurn    float64   `json:"reward_churn" parquet:"reward_churn"`       //
	RewardRecovery float64   `json:"reward_recovery" parquet:"reward_recovery"` //
	RewardReconf   float64   `json:"reward_reconf" parquet:"reward_reconf"`     //
	Applied        []float64 `json:"applied" parquet:"applied,list"`            // applied allocation per task, millicores
	Queue          []float64 `json:"queue" parquet:"queue,list"`                // events waiting per task
	ReservedCPU    float64   `json:"reserved_cpu" parquet:"reserved_cpu"`       // CPU the controller held, millicores (see Footprint)
	ActiveServers  int64     `json:"active_servers" parquet:"active_servers"`   // servers hosting a task replica with CPU > 0 (see Footprint)
	Replanned      bool      `json:"replanned" parquet:"replanned"`             // the action was a replica plan
	OverCapacity   bool      `json:"over_capacity" parquet:"over_capacity"`     // the controller found the demand beyond the whole cluster
}

// setReward copies the reward terms into iv.
func (iv *Interval) setReward(r env.RewardTerms) {
	iv.Reward, iv.RewardSLO, iv.RewardRisk, iv.RewardResource = r.Total, r.SLO, r.Risk, r.Resource
	iv.RewardProgress, iv.RewardChurn, iv.RewardRecovery, iv.RewardReconf = r.Progress, r.Churn, r.Recovery, r.Reconf
}

// Summary holds an episode's means over its intervals (the run-level
// record: runs.parquet, `eval run -json`).
type Summary struct {
	Steps             int64   `json:"steps" parquet:"steps"`                                               // intervals run
	ViolationRate     float64 `json:"violation_rate" parquet:"violation_rate"`                             // share of intervals with p95 > SLO, [0, 1]
	MeanP95MS         float64 `json:"mean_p95_ms" parquet:"mean_p95_ms"`                                   // mean of the per-interval p95, ms
	MeanLatencyMS     float64 `json:"mean_latency_ms" parquet:"mean_latency_ms"`                           // mean of the per-interval mean latency, ms
	MeanCPU           float64 `json:"mean_cpu_millicores" parquet:"mean_cpu_millicores"`                   // mean total applied CPU, millicores
	MeanThroughput    float64 `json:"mean_throughput" parquet:"mean_throughput"`                           // mean throughput, messages/s
	MeanOffered       float64 `json:"mean_offered" parquet:"mean_offered"`                                 // mean offered load, messages/s
	MeanReward        float64 `json:"mean_reward" parquet:"mean_reward"`                                   // mean reward per interval
	TotalReward       float64 `json:"total_reward" parquet:"total_reward"`                                 // undiscounted return
	MeanReservedCPU   float64 `json:"mean_reserved_cpu_millicores" parquet:"mean_reserved_cpu_millicores"` // mean reserved CPU, millicores
	MeanActiveServers float64 `json:"mean_active_servers" parquet:"mean_active_servers"`                   // mean number of active servers
	Replans           int64   `json:"replans" parquet:"replans"`                                           // intervals whose action was a replica plan
	OverCapacitySteps int64   `json:"over_capacity_steps" parquet:"over_capacity_steps"`                   // intervals whose demand the controller found beyond the cluster
}

// Key identifies a run: the columns that precede its Interval or Summary
// in the Parquet files.
type Key struct {
	Profile       string `json:"profile" parquet:"profile,dict"`
	Trace         string `json:"trace" parquet:"trace,dict"`
	Scenario      string `json:"scenario" parquet:"scenario,dict"` // physics preset (Spec.Scenario)
	PlacementSeed uint64 `json:"placement_seed" parquet:"placement_seed"`
	Seed          uint64 `json:"seed" parquet:"seed"`
	Controller    string `json:"controller" parquet:"controller,dict"` // canonical controller spec
}

// Result is one finished episode.
type Result struct {
	Key
	Horizontal       bool     // the controller re-plans replicas on the horizontal scenario
	SLOMS            float64  // the application's SLO on p95 latency, ms
	Tasks            []string // task names, in action order
	Placement        []int    // server index of each task (the initial replica of a horizontal run)
	ConfigSHA256     string   // hash of the scenario (see ConfigHash)
	TrajectorySHA256 string   // hash of every interval (see package doc)
	Summary          Summary
	Intervals        []Interval
}

// Config builds the env configuration a Spec runs: the edge scenario of
// its profile, placement seed, workload and physics, or, for a horizontal
// controller, that scenario's horizontal counterpart (Controller.Config;
// without a Controller, the edge scenario).
func Config(s Spec) (env.Config, error) {
	if s.Workload == nil {
		return env.Config{}, errors.New("eval: no workload")
	}
	if s.Steps < 0 {
		return env.Config{}, fmt.Errorf("eval: steps %d, want ≥ 0", s.Steps)
	}
	cfg, err := env.EdgeConfig(s.Profile, s.PlacementSeed, s.Workload)
	if err != nil {
		return env.Config{}, fmt.Errorf("eval: %w", err)
	}
	cfg.Steps = s.Steps
	if err := (env.Scenario{Physics: s.Physics, Demand: s.Demand}).Apply(&cfg); err != nil {
		return env.Config{}, fmt.Errorf("eval: %w", err)
	}
	if s.Controller == nil { // the edge scenario itself
		return cfg, nil
	}
	return s.Controller.Config(cfg)
}

// Run runs the episode s describes through agents.RunEpisode (which
// checks ctx every 256 intervals).
func Run(ctx context.Context, s Spec) (Result, error) {
	cfg, err := Config(s)
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
		Key:        Key{Profile: s.Profile, Trace: s.TraceName, Scenario: s.Scenario, PlacementSeed: s.PlacementSeed, Seed: s.Seed, Controller: s.Controller.String()},
		Horizontal: s.Controller.Horizontal(), SLOMS: e.SLOMS(),
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
			Step: int64(info.Step), Offered: info.OfferedRate, Throughput: info.Throughput, SinkEvents: info.SinkEvents,
			P95MS: info.P95MS, MeanMS: info.MeanMS, Violated: info.Violated, TotalCPU: info.TotalCPU,
			InFlight: info.InFlight,
			Applied:  applied[t*n : (t+1)*n : (t+1)*n], Queue: queue[t*n : (t+1)*n : (t+1)*n],
			Replanned: st.Action.Replicas != nil, OverCapacity: st.OverCapacity,
		}
		iv.setReward(info.Reward)
		var active int
		iv.ReservedCPU, active = Footprint(cfg.Servers, cfg.SharedCPU, info.Plan, info.Applied)
		iv.ActiveServers = int64(active)
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
	s.Steps = int64(len(intervals))
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
		s.TotalReward += iv.Reward
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

// TrajectoryHash returns the hex SHA-256 of intervals, each encoded field
// by field in Interval's declaration order as little-endian 64-bit words:
// an integer as itself, a float64 by its IEEE-754 bits, a bool as 0 or 1,
// a []float64 as its length followed by its elements.
func TrajectoryHash(intervals []Interval) string {
	h := sha256.New()
	var buf []byte
	for i := range intervals {
		buf = appendFields(buf[:0], reflect.ValueOf(&intervals[i]).Elem())
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// appendFields appends the hash encoding of struct v's fields.
func appendFields(buf []byte, v reflect.Value) []byte {
	u := func(x uint64) { buf = binary.LittleEndian.AppendUint64(buf, x) }
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			u(uint64(f.Int()))
		case reflect.Uint64:
			u(f.Uint())
		case reflect.Float64:
			u(math.Float64bits(f.Float()))
		case reflect.Bool:
			if f.Bool() {
				u(1)
			} else {
				u(0)
			}
		case reflect.Slice:
			u(uint64(f.Len()))
			for j := range f.Len() {
				u(math.Float64bits(f.Index(j).Float()))
			}
		default:
			panic(fmt.Sprintf("runner: Interval field %s has kind %s, which TrajectoryHash does not encode", v.Type().Field(i).Name, f.Kind()))
		}
	}
	return buf
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
