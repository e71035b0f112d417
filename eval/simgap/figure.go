package simgap

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"streamscale/eval/runner"
)

// Figures writes into dir, for every (live, simulated) pair of runs —
// results alternate live, sim as eval simgap appends them — one figure of the
// interval p95 over time, both worlds on a log axis with the SLO, named
// simgap_p95_<controller>_<placement>.png. It returns the file names.
func Figures(dir string, results []runner.Result) ([]string, error) {
	var files []string
	for i := 0; i+1 < len(results); i += 2 {
		lv, sim := results[i], results[i+1]
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s / %s, placement %d: %s, p95 per interval", lv.Profile, lv.Trace, lv.PlacementSeed, lv.Controller)
		p.X.Label.Text = "interval"
		p.Y.Label.Text = "p95 (ms)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		n := 0
		for j, r := range []runner.Result{sim, lv} {
			pts := make(plotter.XYs, len(r.Intervals))
			for k, iv := range r.Intervals {
				// The log axis needs y > 0: an interval without
				// completions is drawn at 1 ms.
				pts[k].X, pts[k].Y = float64(k), math.Max(iv.P95MS, 1)
			}
			n = max(n, len(pts))
			l, err := plotter.NewLine(pts)
			if err != nil {
				return files, fmt.Errorf("simgap: figure: %w", err)
			}
			l.Color = []color.Color{color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}}[j]
			l.Width = vg.Points(1.2)
			p.Add(l)
			p.Legend.Add([]string{"simulator (" + sim.Scenario + ")", "live"}[j], l)
		}
		if slo := lv.SLOMS; slo > 0 && n > 1 {
			s, err := plotter.NewLine(plotter.XYs{{X: 0, Y: slo}, {X: float64(n - 1), Y: slo}})
			if err != nil {
				return files, fmt.Errorf("simgap: figure: %w", err)
			}
			s.Color, s.Dashes = color.Gray{Y: 90}, []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(s)
			p.Legend.Add(fmt.Sprintf("SLO %.0f ms", slo), s)
		}
		name := fmt.Sprintf("simgap_p95_%s_%d.png", strings.NewReplacer(":", "-", "/", "-", "=", "-").Replace(lv.Controller), lv.PlacementSeed)
		if err := p.Save(7*vg.Inch, 3.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return files, fmt.Errorf("simgap: figure: %w", err)
		}
		files = append(files, name)
	}
	return files, nil
}
