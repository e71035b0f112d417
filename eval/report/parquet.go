package report

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"streamscale/eval/runner"
)

// IntervalRow is one interval of one run in intervals.parquet (and in the
// file `eval run -out` writes).
type IntervalRow struct {
	Profile        string    `parquet:"profile,dict"`
	Trace          string    `parquet:"trace,dict"`
	PlacementSeed  uint64    `parquet:"placement_seed"`
	Seed           uint64    `parquet:"seed"`
	Controller     string    `parquet:"controller,dict"`
	Step           int64     `parquet:"step"`
	Offered        float64   `parquet:"offered"`
	Throughput     float64   `parquet:"throughput"`
	SinkEvents     float64   `parquet:"sink_events"`
	P95MS          float64   `parquet:"p95_ms"`
	MeanMS         float64   `parquet:"mean_ms"`
	Violated       bool      `parquet:"violated"`
	TotalCPU       float64   `parquet:"total_cpu"`
	InFlight       float64   `parquet:"in_flight"`
	Reward         float64   `parquet:"reward"`
	RewardSLO      float64   `parquet:"reward_slo"`
	RewardRisk     float64   `parquet:"reward_risk"`
	RewardResource float64   `parquet:"reward_resource"`
	RewardProgress float64   `parquet:"reward_progress"`
	RewardChurn    float64   `parquet:"reward_churn"`
	RewardRecovery float64   `parquet:"reward_recovery"`
	RewardReconf   float64   `parquet:"reward_reconf"`
	Applied        []float64 `parquet:"applied,list"`
	Queue          []float64 `parquet:"queue,list"`
	ReservedCPU    float64   `parquet:"reserved_cpu"`
	ActiveServers  int64     `parquet:"active_servers"`
	Replanned      bool      `parquet:"replanned"`
	OverCapacity   bool      `parquet:"over_capacity"`
}

// RunRow is one run in runs.parquet.
type RunRow struct {
	Profile          string  `parquet:"profile,dict"`
	Trace            string  `parquet:"trace,dict"`
	PlacementSeed    uint64  `parquet:"placement_seed"`
	Seed             uint64  `parquet:"seed"`
	Controller       string  `parquet:"controller,dict"`
	Horizontal       bool    `parquet:"horizontal"`
	Steps            int64   `parquet:"steps"`
	SLOMS            float64 `parquet:"slo_ms"`
	ViolationRate    float64 `parquet:"violation_rate"`
	MeanP95MS        float64 `parquet:"mean_p95_ms"`
	MeanLatencyMS    float64 `parquet:"mean_latency_ms"`
	MeanCPU          float64 `parquet:"mean_cpu_millicores"`
	MeanThroughput   float64 `parquet:"mean_throughput"`
	MeanOffered      float64 `parquet:"mean_offered"`
	MeanReward       float64 `parquet:"mean_reward"`
	TotalReward      float64 `parquet:"total_reward"`
	MeanReservedCPU  float64 `parquet:"mean_reserved_cpu_millicores"`
	MeanActive       float64 `parquet:"mean_active_servers"`
	Replans          int64   `parquet:"replans"`
	OverCapacity     int64   `parquet:"over_capacity_steps"`
	ConfigSHA256     string  `parquet:"config_sha256"`
	TrajectorySHA256 string  `parquet:"trajectory_sha256"`
}

func writerOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&parquet.Zstd),
		parquet.CreatedBy("streamscale/eval", "0", "none"),
	}
}

// IntervalRows converts a run's intervals to rows.
func IntervalRows(r runner.Result) []IntervalRow {
	rows := make([]IntervalRow, len(r.Intervals))
	for i, iv := range r.Intervals {
		rw := iv.Reward
		rows[i] = IntervalRow{
			Profile: r.Profile, Trace: r.Trace, PlacementSeed: r.PlacementSeed, Seed: r.Seed, Controller: r.Controller,
			Step: int64(iv.Step), Offered: iv.Offered, Throughput: iv.Throughput, SinkEvents: iv.SinkEvents,
			P95MS: iv.P95MS, MeanMS: iv.MeanMS, Violated: iv.Violated, TotalCPU: iv.TotalCPU, InFlight: iv.InFlight,
			Reward: rw.Total, RewardSLO: rw.SLO, RewardRisk: rw.Risk, RewardResource: rw.Resource,
			RewardProgress: rw.Progress, RewardChurn: rw.Churn, RewardRecovery: rw.Recovery, RewardReconf: rw.Reconf,
			Applied: iv.Applied, Queue: iv.Queue,
			ReservedCPU: iv.ReservedCPU, ActiveServers: int64(iv.ActiveServers), Replanned: iv.Replanned, OverCapacity: iv.OverCapacity,
		}
	}
	return rows
}

// RunRowOf summarises a run as a row.
func RunRowOf(r runner.Result) RunRow {
	s := r.Summary
	return RunRow{
		Profile: r.Profile, Trace: r.Trace, PlacementSeed: r.PlacementSeed, Seed: r.Seed, Controller: r.Controller,
		Horizontal: r.Horizontal, Steps: int64(s.Steps), SLOMS: r.SLOMS, ViolationRate: s.ViolationRate, MeanP95MS: s.MeanP95MS,
		MeanLatencyMS: s.MeanLatencyMS, MeanCPU: s.MeanCPU, MeanThroughput: s.MeanThroughput,
		MeanOffered: s.MeanOffered, MeanReward: s.MeanReward, TotalReward: s.TotalReward,
		MeanReservedCPU: s.MeanReservedCPU, MeanActive: s.MeanActiveServers,
		Replans: int64(s.Replans), OverCapacity: int64(s.OverCapacitySteps),
		ConfigSHA256: r.ConfigSHA256, TrajectorySHA256: r.TrajectorySHA256,
	}
}

// IntervalWriter streams runs' intervals to a Parquet file, one row group
// per run.
type IntervalWriter struct {
	w *parquet.GenericWriter[IntervalRow]
}

// NewIntervalWriter starts a Parquet file of IntervalRows on w.
func NewIntervalWriter(w io.Writer) *IntervalWriter {
	return &IntervalWriter{w: parquet.NewGenericWriter[IntervalRow](w, writerOptions()...)}
}

// Write appends r's intervals as one row group.
func (iw *IntervalWriter) Write(r runner.Result) error {
	if _, err := iw.w.Write(IntervalRows(r)); err != nil {
		return fmt.Errorf("eval: writing intervals: %w", err)
	}
	if err := iw.w.Flush(); err != nil {
		return fmt.Errorf("eval: writing intervals: %w", err)
	}
	return nil
}

// Close finishes the file (it does not close the underlying writer).
func (iw *IntervalWriter) Close() error {
	if err := iw.w.Close(); err != nil {
		return fmt.Errorf("eval: writing intervals: %w", err)
	}
	return nil
}

// WriteRuns writes runs.parquet rows to w.
func WriteRuns(w io.Writer, rows []RunRow) error {
	pw := parquet.NewGenericWriter[RunRow](w, writerOptions()...)
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("eval: writing runs: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("eval: writing runs: %w", err)
	}
	return nil
}
