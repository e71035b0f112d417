package simgap

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/runner"
)

// FileObservations is `eval simgap -obs`'s record of every observation the
// controllers were given, in both worlds.
const FileObservations = "observations.parquet"

// The worlds of an observation record.
const (
	WorldLive = "live"
	WorldSim  = "sim"
)

// Recorder is a vertical controller that records every observation it is
// given (flattened, env.Observation.Flatten) before asking the controller
// it wraps: the simulated world's record. It is not safe for concurrent
// use (the runner calls a controller from one goroutine).
type Recorder struct {
	agents.Controller
	Rows [][]float64
}

// Act records obs and asks the wrapped controller.
func (r *Recorder) Act(obs env.Observation) (env.Action, error) {
	r.Rows = append(r.Rows, obs.Flatten(nil))
	return r.Controller.Act(obs)
}

// RecordingFactory builds its Factory's controller wrapped in Rec
// (vertical controllers only; a horizontal one is built as it is).
type RecordingFactory struct {
	runner.Factory
	Rec *Recorder
}

// Build builds the controller and points Rec at it.
func (f RecordingFactory) Build(c env.Config) (agents.Actor, error) {
	a, err := f.Factory.Build(c)
	if err != nil || a.IsHorizontal() {
		return a, err
	}
	f.Rec.Controller = a.Controller()
	return agents.Vertical(f.Rec), nil
}

// ObsRun is one run's observations: row t is the observation interval t's
// allocation was decided on (0: the initial state's), one per recorded
// interval.
type ObsRun struct {
	World      string // WorldLive or WorldSim
	Controller string
	Placement  uint64
	Rows       [][]float64
}

// ObsRow is one feature of one observation in observations.parquet.
type ObsRow struct {
	World      string  `parquet:"world,dict"` // live or sim
	Controller string  `parquet:"controller,dict"`
	Placement  int64   `parquet:"placement_seed"`
	Step       int64   `parquet:"step"` // the interval whose allocation the controller decided on this observation (0: the initial state's)
	Feature    string  `parquet:"feature,dict"`
	Value      float64 `parquet:"value"`
}

// WriteObservations writes runs to w as observations.parquet, one row per
// feature and interval, features named by names. A row of another width
// is an error naming the run.
func WriteObservations(w io.Writer, names []string, runs []ObsRun) error {
	pw := parquet.NewGenericWriter[ObsRow](w, parquet.Compression(&parquet.Zstd), parquet.CreatedBy("streamscale/eval", "0", "none"))
	err := writeObsRows(pw, names, runs)
	if cerr := pw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("simgap: %w", cerr)
	}
	return err
}

func writeObsRows(pw *parquet.GenericWriter[ObsRow], names []string, runs []ObsRun) error {
	buf := make([]ObsRow, 0, len(names))
	for _, r := range runs {
		for t, row := range r.Rows {
			if len(row) != len(names) {
				return fmt.Errorf("simgap: %s %s placement %d interval %d: %d observation features, want %d", r.World, r.Controller, r.Placement, t, len(row), len(names))
			}
			buf = buf[:0]
			for i, v := range row {
				buf = append(buf, ObsRow{World: r.World, Controller: r.Controller, Placement: int64(r.Placement), Step: int64(t), Feature: names[i], Value: v})
			}
			if _, err := pw.Write(buf); err != nil {
				return fmt.Errorf("simgap: %w", err)
			}
		}
	}
	return nil
}

// FeatureGap is one feature's difference between the worlds for one
// controller, over every interval of its placements.
type FeatureGap struct {
	Feature  string  `json:"feature"`
	MeanSim  float64 `json:"mean_sim"`
	MeanLive float64 `json:"mean_live"`
	// SMD is the standardized mean difference (sim − live) / pooled SD,
	// the pooled SD √((var_sim + var_live)/2); null when both worlds are
	// constant (and differ), which ranks first.
	SMD *float64 `json:"smd"`
}

// rank is |SMD|, +Inf for a null SMD.
func (g FeatureGap) rank() float64 {
	if g.SMD == nil {
		return math.Inf(1)
	}
	return math.Abs(*g.SMD)
}

// ObsGap lists, per controller, the features whose means differ most
// between the worlds.
type ObsGap struct {
	Controller string       `json:"controller"`
	Intervals  int          `json:"intervals"` // per world: the smaller of the two pooled counts
	Top        []FeatureGap `json:"top"`
}

// ObsGapTop is how many features per controller ObservationGaps keeps.
const ObsGapTop = 10

// ObservationGaps compares, per controller (in order of first
// appearance), the live and simulated observations pooled over its
// placements, and keeps the ObsGapTop features of largest |SMD| (ties by
// feature order). Features equal in both worlds are left out, and so is
// a controller without observations in both worlds.
func ObservationGaps(names []string, runs []ObsRun) []ObsGap {
	var order []string
	pooled := map[string]*[2][][]float64{}
	for _, r := range runs {
		p, ok := pooled[r.Controller]
		if !ok {
			p = &[2][][]float64{}
			pooled[r.Controller] = p
			order = append(order, r.Controller)
		}
		w := worldIndex(r.World)
		p[w] = append(p[w], r.Rows...)
	}
	var out []ObsGap
	for _, c := range order {
		live, sim := pooled[c][0], pooled[c][1]
		if len(live) == 0 || len(sim) == 0 {
			continue
		}
		gaps := featureGaps(names, live, sim)
		out = append(out, ObsGap{Controller: c, Intervals: min(len(live), len(sim)), Top: gaps[:min(len(gaps), ObsGapTop)]})
	}
	return out
}

// featureGaps is every differing feature of live against sim, by |SMD|.
func featureGaps(names []string, live, sim [][]float64) []FeatureGap {
	var gaps []FeatureGap
	for i, name := range names {
		ml, vl := meanVar(live, i)
		ms, vs := meanVar(sim, i)
		if ml == ms {
			continue
		}
		g := FeatureGap{Feature: name, MeanSim: ms, MeanLive: ml}
		if sd := math.Sqrt((vl + vs) / 2); sd > 0 {
			d := (ms - ml) / sd
			g.SMD = &d
		}
		gaps = append(gaps, g)
	}
	slices.SortStableFunc(gaps, func(a, b FeatureGap) int { return cmp.Compare(b.rank(), a.rank()) })
	return gaps
}

// meanVar is the mean and population variance of column i of rows.
func meanVar(rows [][]float64, i int) (mean, variance float64) {
	for _, r := range rows {
		mean += r[i]
	}
	mean /= float64(len(rows))
	for _, r := range rows {
		d := r[i] - mean
		variance += d * d
	}
	return mean, variance / float64(len(rows))
}

// WriteObsGaps writes report.md's observation-gap section (nothing
// without gaps).
func WriteObsGaps(b *strings.Builder, gaps []ObsGap) {
	if len(gaps) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Observation gap (sim − live, `%s`)\n\n", FileObservations)
	fmt.Fprintf(b, "Per controller, pooled over its placements' intervals, the %d features whose means differ most between the worlds, by standardized mean difference (sim − live over the pooled SD).\n", ObsGapTop)
	for _, g := range gaps {
		fmt.Fprintf(b, "\n%s (%d intervals per world):\n\n| feature | mean sim | mean live | SMD |\n|---|---:|---:|---:|\n", g.Controller, g.Intervals)
		for _, f := range g.Top {
			smd := "constant in both"
			if f.SMD != nil {
				smd = fmt.Sprintf("%+.2f", *f.SMD)
			}
			fmt.Fprintf(b, "| %s | %.4g | %.4g | %s |\n", f.Feature, f.MeanSim, f.MeanLive, smd)
		}
	}
}

func other(world string) string {
	if world == WorldLive {
		return WorldSim
	}
	return WorldLive
}

func worldIndex(world string) int {
	if world == WorldLive {
		return 0
	}
	return 1
}
