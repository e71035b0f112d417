package claspexp

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"streamscale/eval/internal/pngplot"
)

// Figure file names, in the order Figures writes them.
const (
	FigScaling   = "clasp_scaling.png"   // (1) speed-up over one worker
	FigPlacement = "clasp_placement.png" // (4) sustained rate per method on 10 workers
	FigModes     = "clasp_modes.png"     // (6) workers and p95 over time, per mode
)

// okabeIto holds distinguishable colours, one per method or app.
var okabeIto = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{86, 180, 233, 255},
	color.RGBA{120, 120, 120, 255}, color.RGBA{0, 0, 0, 255},
}

func figColour(i int) color.Color { return okabeIto[i%len(okabeIto)] }

// Figures writes the report's figures into dir as PNG and returns their
// file names. The images depend only on the report.
func Figures(dir string, r *Report) ([]string, error) {
	var names []string
	if len(r.Scaling) > 0 {
		p, err := scalingPlot(r)
		if err != nil {
			return nil, err
		}
		if err := writePNG(filepath.Join(dir, FigScaling), [][]*plot.Plot{{p}}, 6.5, 4.2); err != nil {
			return nil, err
		}
		names = append(names, FigScaling)
	}
	if len(r.Placements) > 0 {
		p, err := placementPlot(r)
		if err != nil {
			return nil, err
		}
		if err := writePNG(filepath.Join(dir, FigPlacement), [][]*plot.Plot{{p}}, 7.5, 4.2); err != nil {
			return nil, err
		}
		names = append(names, FigPlacement)
	}
	if len(r.ModeRuns) > 0 {
		grid, err := modePlots(r)
		if err != nil {
			return nil, err
		}
		if err := writePNG(filepath.Join(dir, FigModes), grid, 6, 3.4); err != nil {
			return nil, err
		}
		names = append(names, FigModes)
	}
	return names, nil
}

func newFig(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// scalingPlot: sustained rate over the one-worker rate, per app, against
// the worker count, with the ideal linear speed-up.
func scalingPlot(r *Report) (*plot.Plot, error) {
	p := newFig("(1) Scaling with CLASP's placement", "workers", "speed-up over 1 worker")
	ideal := plotter.XYs{}
	for i, row := range r.Scaling {
		xy := make(plotter.XYs, len(row.Workers))
		for k, n := range row.Workers {
			xy[k].X, xy[k].Y = float64(n), row.MaxRate[k]/row.MaxRate[0]
			if i == 0 {
				ideal = append(ideal, plotter.XY{X: float64(n), Y: float64(n)})
			}
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color = figColour(i), figColour(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(row.App, l, pts)
	}
	l, err := plotter.NewLine(ideal)
	if err != nil {
		return nil, err
	}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	l.Color = color.Gray{Y: 90}
	p.Add(l)
	p.Legend.Add("linear", l)
	return p, nil
}

// placementPlot: grouped bars of the sustained rate on 10 workers, per app
// and method, normalised to CLASP's.
func placementPlot(r *Report) (*plot.Plot, error) {
	methods := []string{"clasp", "faasflow", "zhang24"}
	p := newFig(fmt.Sprintf("(4) Placement on %d workers", r.Placements[0].Workers), "", "sustained rate / CLASP's")
	var apps []string
	for _, row := range r.Placements {
		apps = append(apps, row.App)
	}
	w := vg.Points(14)
	for k, m := range methods {
		vals := make(plotter.Values, len(r.Placements))
		for i, row := range r.Placements {
			if c := row.MaxRate["clasp"]; c > 0 {
				vals[i] = row.MaxRate[m] / c
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = figColour(k)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(k-1) * w
		p.Add(b)
		p.Legend.Add(m, b)
	}
	p.NominalX(apps...)
	p.Legend.Left = false
	return p, nil
}

// modePlots: per app and mode, active workers over time (top) and the
// per-step p95 (bottom, log scale) for every method.
func modePlots(r *Report) ([][]*plot.Plot, error) {
	type key struct{ app, mode string }
	var keys []key
	seen := map[key]bool{}
	for _, m := range r.ModeRuns {
		k := key{m.App, m.Mode}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	var grid [][]*plot.Plot
	for _, k := range keys {
		wp := newFig(fmt.Sprintf("(6) %s, %s: workers", k.app, k.mode), "time (s)", "active workers")
		lp := newFig(fmt.Sprintf("(6) %s, %s: p95", k.app, k.mode), "time (s)", "p95 latency (ms, log)")
		lp.Y.Scale = plot.LogScale{}
		lp.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		i := 0
		for _, m := range r.ModeRuns {
			if m.App != k.app || m.Mode != k.mode || m.Seed != r.ModeRuns[0].Seed {
				continue // the first seed only
			}
			ws, ls := make(plotter.XYs, len(m.Workers)), make(plotter.XYs, len(m.StepP95MS))
			for t := range m.Workers {
				ws[t].X, ws[t].Y = float64(t), float64(m.Workers[t])
			}
			for t := range m.StepP95MS {
				ls[t].X, ls[t].Y = float64(t), math.Max(m.StepP95MS[t], 1)
			}
			for _, pl := range []struct {
				p  *plot.Plot
				xy plotter.XYs
			}{{wp, ws}, {lp, ls}} {
				l, err := plotter.NewLine(pl.xy)
				if err != nil {
					return nil, err
				}
				l.Color = figColour(i)
				if i > 0 {
					l.Dashes = plotutil.Dashes(i)
				}
				pl.p.Add(l)
				pl.p.Legend.Add(m.Method, l)
			}
			i++
		}
		grid = append(grid, []*plot.Plot{wp, lp})
	}
	return grid, nil
}

// writePNG draws a grid of plots (rows × columns, each cell w × h inches).
func writePNG(path string, grid [][]*plot.Plot, w, h float64) error {
	return pngplot.Write(path, "", grid, vg.Length(w)*vg.Inch, vg.Length(h)*vg.Inch)
}
