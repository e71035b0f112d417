package claspexp

import (
	"fmt"
	"math"

	"streamscale/agents/horizontal"
	"streamscale/clasp"
	"streamscale/env"
)

// OverprovisionLoad is the share of the one-worker maximum sustained rate
// at which over-provisioning is measured: 1, as in the paper.
const OverprovisionLoad = 1.0

// SteadyProbe tightens pr for experiment (2): a rate counts as sustained
// only if the throughput over the second half is within 0.1% of it and the
// backlog grows by less than 0.05 s of input over the second half. The default probe's 3% tolerance
// admits rates up to 3% above a deterministic worker's capacity, whose
// queue then grows for the whole run; at 100% of such a "maximum" the
// one-worker p95 measures the run's length, not the worker.
func SteadyProbe(pr Probe) Probe {
	pr.MinRatio, pr.MaxBacklogS = 0.999, 0.05
	return pr
}

// OverprovisionRow is one application's p95 latency at OverprovisionLoad
// of its one-worker maximum sustained rate, on each worker count with the
// paper's placement for that count (paper experiment (2), over-provisioning).
type OverprovisionRow struct {
	App     string    `json:"app"`
	Rate    float64   `json:"rate"`    // events/s: OverprovisionLoad × the one-worker maximum sustained rate (SteadyProbe)
	Workers []int     `json:"workers"` // worker counts, the first is 1
	P95MS   []float64 `json:"p95_ms"`  // mean per-step p95 over the second half of the run, ms
	// Ratio[n] is P95MS at n workers over P95MS at 1 worker (0 if the
	// latter is 0).
	Ratio map[string]float64 `json:"p95_ratio"`
}

// Overprovision runs every app at OverprovisionLoad of its one-worker
// maximum sustained rate (searched with MaxRate under SteadyProbe(pr)) on
// each worker count n of workers (which must start with 1), with the
// paper's placement on exactly n workers (PaperPlacer) held for pr.Steps
// seconds, and reports the mean per-step p95 over the second half of the
// run.
func Overprovision(apps []clasp.App, workers []int, pr Probe) ([]OverprovisionRow, error) {
	if len(workers) == 0 || workers[0] != 1 {
		return nil, fmt.Errorf("claspexp: over-provisioning worker counts %v must start with 1", workers)
	}
	var rows []OverprovisionRow
	for _, app := range apps {
		pred, err := PredictedRate(app, 1)
		if err != nil {
			return nil, err
		}
		rate, err := MaxRate(app, 1, PaperPlacer(1), pred, SteadyProbe(pr))
		if err != nil {
			return nil, fmt.Errorf("claspexp: %s on 1 worker: %w", app.Name, err)
		}
		rate *= OverprovisionLoad
		row := OverprovisionRow{App: app.Name, Rate: rate, Workers: workers, Ratio: map[string]float64{}}
		for _, n := range workers {
			p95, err := meanP95(app, n, rate, pr)
			if err != nil {
				return nil, fmt.Errorf("claspexp: %s on %d workers: %w", app.Name, n, err)
			}
			row.P95MS = append(row.P95MS, p95)
			ratio := 0.0
			if row.P95MS[0] > 0 {
				ratio = p95 / row.P95MS[0]
			}
			row.Ratio[fmt.Sprint(n)] = ratio
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// meanP95 runs app at rate on n workers with the paper's placement for n
// workers, held for steps seconds, and returns the mean per-step p95 over
// the second half of the run, ms.
func meanP95(app clasp.App, n int, rate float64, pr Probe) (float64, error) {
	steps := pr.Steps
	ids, shares, err := PaperPlacer(n)(app, rate)
	if err != nil {
		return 0, err
	}
	reps, err := horizontal.ReplicasFromShares(ids, shares, n)
	if err != nil {
		return 0, err
	}
	cfg, err := ClusterConfig(app, n, rate, steps, reps)
	if err != nil {
		return 0, err
	}
	if pr.ProcessorSharing {
		cfg.Worker = env.WorkerPhysics{}
	}
	capInFlight(&cfg, pr.MaxInFlight)
	recs, err := run(cfg, horizontal.Hold{}, 1, nil)
	if err != nil {
		return 0, err
	}
	half := recs[len(recs)/2:]
	sum := 0.0
	for _, r := range half {
		sum += r.P95MS
	}
	p := sum / float64(len(half))
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return 0, fmt.Errorf("claspexp: p95 %v", p)
	}
	return p, nil
}

// setOverprovision stores the over-provisioning rows and their summaries
// in the report.
func (r *Report) setOverprovision(rows []OverprovisionRow) {
	r.Overprovision = rows
	r.OverprovisionP95MS = map[string]map[string]float64{}
	for _, row := range rows {
		m := map[string]float64{}
		for i, n := range row.Workers {
			m[fmt.Sprint(n)] = row.P95MS[i]
		}
		r.OverprovisionP95MS[row.App] = m
		if row.App == "syn" {
			r.SYNP95Ratio5, r.SYNP95Ratio10 = row.Ratio["5"], row.Ratio["10"]
			r.OverprovisionP95Ratio5, r.OverprovisionP95Ratio10 = row.Ratio["5"], row.Ratio["10"]
		}
	}
}
