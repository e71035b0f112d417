package cli

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"os"
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

// obsRecorder is a vertical controller that records every observation it
// is given (flattened, env.Observation.Flatten) before asking the
// controller it wraps. Live, the observation is the one eval/live built
// from the workers' reports; simulated, the Env's.
type obsRecorder struct {
	agents.Controller
	rows [][]float64
}

func (r *obsRecorder) Act(obs env.Observation) (env.Action, error) {
	r.rows = append(r.rows, obs.Flatten(nil))
	return r.Controller.Act(obs)
}

// recordingFactory builds its Factory's controller wrapped in rec
// (vertical controllers only; a horizontal one is built as it is).
type recordingFactory struct {
	runner.Factory
	rec *obsRecorder
}

func (f recordingFactory) Build(c env.Config) (agents.Actor, error) {
	a, err := f.Factory.Build(c)
	if err != nil || a.IsHorizontal() {
		return a, err
	}
	f.rec.Controller = a.Controller()
	return agents.Vertical(f.rec), nil
}

// obsRun is one run's observations: world "live" or "sim".
type obsRun struct {
	world, controller string
	placement         uint64
	rows              [][]float64
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

// writeObservations writes runs to path, one row per feature and interval.
func writeObservations(path string, names []string, runs []obsRun) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	bw := bufio.NewWriter(f)
	pw := parquet.NewGenericWriter[ObsRow](bw, parquet.Compression(&parquet.Zstd), parquet.CreatedBy("streamscale/eval", "0", "none"))
	buf := make([]ObsRow, 0, len(names))
	for _, r := range runs {
		for t, row := range r.rows {
			if len(row) != len(names) {
				err = fmt.Errorf("eval: %s %s placement %d interval %d: %d observation features, want %d", r.world, r.controller, r.placement, t, len(row), len(names))
				break
			}
			buf = buf[:0]
			for i, v := range row {
				buf = append(buf, ObsRow{World: r.world, Controller: r.controller, Placement: int64(r.placement), Step: int64(t), Feature: names[i], Value: v})
			}
			if _, err = pw.Write(buf); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if cerr := pw.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("eval: writing %s: %w", path, err)
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
	Intervals  int          `json:"intervals"` // per world
	Top        []FeatureGap `json:"top"`
}

// obsGapTop is how many features per controller the report lists.
const obsGapTop = 10

// observationGaps compares, per controller (in order of first
// appearance), the live and simulated observations pooled over its
// placements, and keeps the obsGapTop features of largest |SMD| (ties by
// feature order). Features equal in both worlds are left out.
func observationGaps(names []string, runs []obsRun) []ObsGap {
	var order []string
	pooled := map[string]*[2][][]float64{}
	for _, r := range runs {
		p, ok := pooled[r.controller]
		if !ok {
			p = &[2][][]float64{}
			pooled[r.controller] = p
			order = append(order, r.controller)
		}
		w := worldIndex(r.world)
		p[w] = append(p[w], r.rows...)
	}
	var out []ObsGap
	for _, c := range order {
		p := pooled[c]
		live, sim := p[0], p[1]
		if len(live) == 0 || len(sim) == 0 {
			continue
		}
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
		out = append(out, ObsGap{Controller: c, Intervals: min(len(live), len(sim)), Top: gaps[:min(len(gaps), obsGapTop)]})
	}
	return out
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

// obsGapMarkdown writes report.md's observation-gap section.
func obsGapMarkdown(b *strings.Builder, gaps []ObsGap) {
	if len(gaps) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Observation gap (sim − live, `%s`)\n\n", FileObservations)
	fmt.Fprintf(b, "Per controller, pooled over its placements' intervals, the %d features whose means differ most between the worlds, by standardized mean difference (sim − live over the pooled SD).\n", obsGapTop)
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
