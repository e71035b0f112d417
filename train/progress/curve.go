package progress

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// CurveFile is the learning-curve figure's name in a run's directory.
const CurveFile = "learning_curve.png"

// Curve colours (Okabe–Ito).
var (
	blue       = color.RGBA{0, 114, 178, 255}
	vermillion = color.RGBA{213, 94, 0, 255}
	green      = color.RGBA{0, 158, 115, 255}
)

// WriteCurve draws the learning curve of rows as a PNG on w: three panels
// over time/total_timesteps, top to bottom rollout/ep_rew_mean,
// train/explained_variance with train/explained_variance_mc, and
// train/entropy_fraction. Undefined values (NaN) are left out of a line.
// The bytes depend only on rows.
func WriteCurve(w io.Writer, rows []ParquetRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("progress: learning curve: no rows")
	}
	pts := func(f func(ParquetRow) float64) plotter.XYs {
		var xy plotter.XYs
		for _, r := range rows {
			if v := f(r); !math.IsNaN(v) && !math.IsInf(v, 0) {
				xy = append(xy, plotter.XY{X: float64(r.TotalTimesteps), Y: v})
			}
		}
		return xy
	}
	type series struct {
		name string // the metric
		c    color.Color
		xy   plotter.XYs
	}
	panels := []struct {
		title, y string
		s        []series
	}{
		{"mean episode return (rollout/ep_rew_mean)", "return", []series{{"rollout/ep_rew_mean", blue, pts(func(r ParquetRow) float64 { return r.EpRewMean })}}},
		{"explained variance vs lambda-returns (blue) and Monte-Carlo returns (orange)", "explained variance", []series{
			{"train/explained_variance", blue, pts(func(r ParquetRow) float64 { return r.ExplainedVariance })},
			{"train/explained_variance_mc", vermillion, pts(func(r ParquetRow) float64 { return r.ExplainedVarianceMC })},
		}},
		{"entropy over its maximum (train/entropy_fraction)", "entropy share", []series{{"train/entropy_fraction", green, pts(func(r ParquetRow) float64 { return r.EntropyFraction })}}},
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = pn.title, "env steps", pn.y
		p.Add(plotter.NewGrid())
		for _, s := range pn.s {
			if len(s.xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(s.xy)
			if err != nil {
				return fmt.Errorf("progress: learning curve: %w", err)
			}
			l.Color, l.Width = s.c, vg.Points(1.5)
			p.Add(l)
			if len(s.xy) == 1 {
				sc, err := plotter.NewScatter(s.xy)
				if err != nil {
					return fmt.Errorf("progress: learning curve: %w", err)
				}
				sc.Color = s.c
				p.Add(sc)
			}
		}
		grid[i] = []*plot.Plot{p}
	}
	const cellW, cellH = 7 * vg.Inch, 2.4 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(cellW, cellH*vg.Length(len(grid))), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	tiles := draw.Tiles{Rows: len(grid), Cols: 1, PadX: 0.3 * vg.Inch, PadY: 0.3 * vg.Inch,
		PadTop: 0.1 * vg.Inch, PadBottom: 0.1 * vg.Inch, PadLeft: 0.1 * vg.Inch, PadRight: 0.2 * vg.Inch}
	canvases := plot.Align(grid, tiles, draw.New(img))
	for i := range grid {
		grid[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("progress: learning curve: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
