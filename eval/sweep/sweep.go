package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"

	"streamscale/env"
	"streamscale/eval/paired"
	"streamscale/eval/runner"
	"streamscale/internal/command"
)

// ComplianceTarget is the largest violation rate at which a grid point
// counts as compliant (Summary.SmallestCompliantCPU).
const ComplianceTarget = 0.05

// DefaultGrid returns the default grid of CPU allocations per task,
// millicores: from the simulator's minimum (500) to its maximum (10,000),
// dense where the SLO is usually first met.
func DefaultGrid() []float64 {
	return []float64{500, 600, 700, 800, 900, 1000, 1250, 1500, 2000, 3000, 5000, 10000}
}

// Placements returns the first n placement seeds, 101, 102, … (those of
// `eval paired`).
func Placements(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = 101 + uint64(i)
	}
	return out
}

// Plan is one sweep.
type Plan struct {
	Profile  string       // application profile, "pred" or "etl"
	Trace    string       // workload name, recorded and part of the episode seed
	Workload env.Workload // arrival rates; read only
	Scenario string       // physics preset name, recorded
	Physics  env.Physics  // simulator physics of every run
	// Demand, if not nil, are measured task demands (runner.Spec.Demand).
	Demand *env.ScenarioDemand
	// Grid holds the CPU allocations per task, millicores, strictly
	// ascending and > 0; Static[i] is the controller that holds every task
	// at Grid[i] (static:N).
	Grid       []float64
	Static     []runner.Factory
	Placements []uint64 // placement seeds, at least one
	Seed       uint64   // root seed of the episode seeds
	Steps      int      // intervals per run; 0 = the workload's length
}

// Validate checks the plan's shape.
func (p Plan) Validate() error {
	switch {
	case p.Workload == nil:
		return errors.New("eval: sweep has no workload")
	case len(p.Grid) == 0:
		return errors.New("eval: sweep grid is empty")
	case len(p.Static) != len(p.Grid):
		return fmt.Errorf("eval: sweep has %d controllers for %d grid points", len(p.Static), len(p.Grid))
	case len(p.Placements) == 0:
		return errors.New("eval: sweep has no placements")
	case p.Steps < 0:
		return fmt.Errorf("eval: steps %d, want ≥ 0", p.Steps)
	}
	for i, c := range p.Grid {
		if !(c > 0) || math.IsInf(c, 0) {
			return fmt.Errorf("eval: sweep grid entry %v, want a finite number > 0", c)
		}
		if i > 0 && c <= p.Grid[i-1] {
			return fmt.Errorf("eval: sweep grid %v after %v, want strictly ascending", c, p.Grid[i-1])
		}
	}
	return nil
}

// Specs lists the runs of the plan: grid point, then placement.
func (p Plan) Specs() []runner.Spec {
	out := make([]runner.Spec, 0, len(p.Grid)*len(p.Placements))
	for i := range p.Grid {
		for _, pl := range p.Placements {
			out = append(out, runner.Spec{
				Profile: p.Profile, TraceName: p.Trace, Workload: p.Workload, PlacementSeed: pl,
				Seed: paired.EpisodeSeed(p.Seed, p.Profile, p.Trace, pl), Steps: p.Steps,
				Controller: p.Static[i], Physics: p.Physics, Scenario: p.Scenario, Demand: p.Demand,
			})
		}
	}
	return out
}

// Row is one run of the sweep (one grid point on one placement), a row of
// sweep.parquet.
type Row struct {
	Profile          string  `parquet:"profile,dict"`
	Trace            string  `parquet:"trace,dict"`
	Scenario         string  `parquet:"scenario,dict"`
	CPUMillicores    float64 `parquet:"cpu_millicores"`      // allocation of every task, millicores
	PlacementSeed    uint64  `parquet:"placement_seed"`      //
	Seed             uint64  `parquet:"seed"`                // episode seed
	Steps            int64   `parquet:"steps"`               // intervals run
	ViolationRate    float64 `parquet:"violation_rate"`      // share of intervals with p95 > SLO
	MedianP95MS      float64 `parquet:"median_p95_ms"`       // median of the per-interval p95, ms
	MeanP95MS        float64 `parquet:"mean_p95_ms"`         // mean of the per-interval p95, ms
	MaxP95MS         float64 `parquet:"max_p95_ms"`          // largest per-interval p95, ms
	MeanLatencyMS    float64 `parquet:"mean_latency_ms"`     // mean of the per-interval mean latency, ms
	MeanCPU          float64 `parquet:"mean_cpu_millicores"` // mean total applied CPU, millicores
	MeanThroughput   float64 `parquet:"mean_throughput"`     // messages/s
	MeanOffered      float64 `parquet:"mean_offered"`        // messages/s
	MeanReward       float64 `parquet:"mean_reward"`         // mean reward per interval
	SLOMS            float64 `parquet:"slo_ms"`              // the application's SLO on p95, ms
	ConfigSHA256     string  `parquet:"config_sha256"`       // runner.ConfigHash of the scenario
	TrajectorySHA256 string  `parquet:"trajectory_sha256"`   // runner.TrajectoryHash of the run
}

// Point is one grid point, aggregated over the placements (see the
// package documentation).
type Point struct {
	CPUMillicores float64    `json:"cpu_millicores"`
	ViolationRate paired.Num `json:"violation_rate"`
	MedianP95MS   paired.Num `json:"median_p95_ms"`
	MeanP95MS     paired.Num `json:"mean_p95_ms"`
}

// Summary is the sweep's result: what `eval sweep -json` prints and
// sweep.json holds.
type Summary struct {
	Profile string `json:"profile"`
	Trace   string `json:"trace"`
	// TraceSource is the trace's file name, or "synthetic" when the data
	// directory did not hold it (traces.Load's fallback): set by the
	// caller, which loaded the trace.
	TraceSource    string      `json:"trace_source"`
	Scenario       string      `json:"scenario"`
	Physics        env.Physics `json:"physics"`
	Steps          int64       `json:"steps"` // intervals per run
	Seed           uint64      `json:"seed"`  // root seed
	PlacementSeeds []uint64    `json:"placement_seeds"`
	SLOMS          float64     `json:"slo_ms"`
	Points         []Point     `json:"points"`
	// SmallestCompliantCPU is the smallest grid point whose violation rate
	// is at most ComplianceTarget (null if none is), P95Ratio its
	// relative median p95 (MedianP95Rel) and PlacementP95Ratios, in placement order, each
	// placement's median p95 there over its median p95 at the largest
	// grid point.
	SmallestCompliantCPU *float64     `json:"smallest_compliant_cpu"`
	P95Ratio             paired.Num   `json:"p95_ratio"`
	PlacementP95Ratios   []paired.Num `json:"placement_p95_ratios"`
	// MedianP95Rel is, per point in grid order, the median over
	// placements and intervals of each interval's p95 over its
	// placement's floor (the median p95 of the same placement at the
	// largest grid point): latency relative to where it settles, with the
	// placements' different network floors divided out. It stands beside
	// Points, whose entries keep the four keys the sweep's users read.
	MedianP95Rel []paired.Num `json:"median_p95_rel"`
	// PeakMedianP95Rel is, per point in grid order, the relative median
	// p95 of the busy intervals only (BusyMedianRel): those whose offered
	// rate is in the top decile of their placement's run, where a static
	// allocation that holds the peaks runs closest to its capacity.
	// PeakP95Ratio is its value at the smallest compliant allocation (NaN
	// without one). It is not the p95 ratio the issue of the realistic
	// physics asks for (P95Ratio); it shows whether latency answers to
	// CPU where the load is near the allocation.
	PeakMedianP95Rel []paired.Num `json:"peak_median_p95_rel"`
	PeakP95Ratio     paired.Num   `json:"peak_p95_ratio"`
	command.Build                 // commit, go_version
}

// BusyShare is the share of a run's intervals, those with the highest
// offered rate, over which Summary.PeakMedianP95Rel is taken.
const BusyShare = 0.1

// Execute runs the plan on at most workers goroutines (progress as in
// paired.Execute) and returns its rows, in grid and placement order, and
// its summary (without Commit and GoVersion).
func Execute(ctx context.Context, p Plan, workers int, progress func(done, total int)) ([]Row, Summary, error) {
	if err := p.Validate(); err != nil {
		return nil, Summary{}, err
	}
	specs := p.Specs()
	rows := make([]Row, len(specs))
	p95s := make([][]float64, len(specs))
	offs := make([][]float64, len(specs))
	emit := func(i int, r runner.Result) error {
		p95 := make([]float64, len(r.Intervals))
		offs[i] = make([]float64, len(r.Intervals))
		maxP95 := 0.0
		for t, iv := range r.Intervals {
			p95[t] = iv.P95MS
			offs[i][t] = iv.Offered
			maxP95 = max(maxP95, iv.P95MS)
		}
		s := r.Summary
		rows[i] = Row{
			Profile: r.Profile, Trace: r.Trace, Scenario: r.Scenario, CPUMillicores: p.Grid[i/len(p.Placements)],
			PlacementSeed: r.PlacementSeed, Seed: r.Seed, Steps: s.Steps, ViolationRate: s.ViolationRate,
			MedianP95MS: Median(p95), MeanP95MS: s.MeanP95MS, MaxP95MS: maxP95, MeanLatencyMS: s.MeanLatencyMS,
			MeanCPU: s.MeanCPU, MeanThroughput: s.MeanThroughput, MeanOffered: s.MeanOffered, MeanReward: s.MeanReward,
			SLOMS: r.SLOMS, ConfigSHA256: r.ConfigSHA256, TrajectorySHA256: r.TrajectorySHA256,
		}
		p95s[i] = p95
		return nil
	}
	if err := paired.Execute(ctx, specs, workers, emit, progress); err != nil {
		return nil, Summary{}, err
	}
	sum := Summary{
		Profile: p.Profile, Trace: p.Trace, Scenario: p.Scenario, Physics: p.Physics,
		Steps: rows[0].Steps, Seed: p.Seed, PlacementSeeds: p.Placements, SLOMS: rows[0].SLOMS,
		P95Ratio: paired.Num(math.NaN()), PeakP95Ratio: paired.Num(math.NaN()),
	}
	m := len(p.Placements)
	top := len(p.Grid) - 1
	floor := make([]float64, m)
	for j := range m {
		floor[j] = rows[top*m+j].MedianP95MS
	}
	for g, c := range p.Grid {
		var all []float64
		viol := 0.0
		for j := range m {
			viol += rows[g*m+j].ViolationRate
			all = append(all, p95s[g*m+j]...)
		}
		sum.Points = append(sum.Points, Point{
			CPUMillicores: c, ViolationRate: paired.Num(viol / float64(m)),
			MedianP95MS: paired.Num(Median(all)), MeanP95MS: paired.Num(mean(all)),
		})
		sum.MedianP95Rel = append(sum.MedianP95Rel, paired.Num(RelativeMedian(p95s[g*m:(g+1)*m], floor)))
		sum.PeakMedianP95Rel = append(sum.PeakMedianP95Rel, paired.Num(BusyMedianRel(p95s[g*m:(g+1)*m], p95s[top*m:], offs[top*m:], BusyShare)))
	}
	for g, pt := range sum.Points {
		if pt.ViolationRate <= ComplianceTarget {
			c := pt.CPUMillicores
			sum.SmallestCompliantCPU = &c
			sum.P95Ratio = sum.MedianP95Rel[g]
			sum.PeakP95Ratio = sum.PeakMedianP95Rel[g]
			for j := range m {
				sum.PlacementP95Ratios = append(sum.PlacementP95Ratios, paired.Num(rows[g*m+j].MedianP95MS/floor[j]))
			}
			break
		}
	}
	return rows, sum, nil
}

// BusyMedianRel returns the median over placements j and busy intervals t
// of series[j][t] / f_j. Placement j's busy intervals are those whose
// offered rate offered[j][t] is at least the (1 − share) quantile of
// offered[j] (the lower of the two order statistics around it), and its
// floor f_j is the median of lavish[j] (the run at the largest
// allocation, whose offered rates offered[j] are: every grid point of a
// placement replays the same episode) over the same intervals. NaN when
// a run's length differs or nothing is busy.
func BusyMedianRel(series, lavish, offered [][]float64, share float64) float64 {
	var rel []float64
	for j, xs := range series {
		off := offered[j]
		if len(xs) != len(off) || len(lavish[j]) != len(off) || len(off) == 0 {
			return math.NaN()
		}
		s := slices.Clone(off)
		slices.Sort(s)
		cut := s[min(len(s)-1, int(math.Floor((1-share)*float64(len(s)-1))))]
		var base []float64
		for t, o := range off {
			if o >= cut {
				base = append(base, lavish[j][t])
			}
		}
		f := Median(base)
		for t, o := range off {
			if o >= cut {
				rel = append(rel, xs[t]/f)
			}
		}
	}
	return Median(rel)
}

// RelativeMedian returns the median over j and t of series[j][t] /
// floor[j] (Summary.MedianP95Rel), NaN if the series are empty.
func RelativeMedian(series [][]float64, floor []float64) float64 {
	var rel []float64
	for j, xs := range series {
		for _, v := range xs {
			rel = append(rel, v/floor[j])
		}
	}
	return Median(rel)
}

// Median returns the median of x (the mean of the two middle values for
// an even count), NaN for an empty slice. x is not modified.
func Median(x []float64) float64 {
	n := len(x)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// mean returns the mean of x summed in order, NaN for an empty slice.
func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// WriteRows writes rows as sweep.parquet to w.
func WriteRows(w io.Writer, rows []Row) error {
	pw := parquet.NewGenericWriter[Row](w, parquet.Compression(&parquet.Zstd), parquet.CreatedBy("streamscale/eval", "0", "none"))
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("eval: writing sweep: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("eval: writing sweep: %w", err)
	}
	return nil
}
