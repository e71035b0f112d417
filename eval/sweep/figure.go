package sweep

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"streamscale/eval/internal/pngplot"
)

// Figure colours (Okabe–Ito).
var (
	lineColour  = color.RGBA{0, 114, 178, 255}   // blue: the aggregate over placements
	meanColour  = color.RGBA{213, 94, 0, 255}    // vermillion: mean p95
	runColour   = color.RGBA{150, 150, 150, 255} // grey: single placements
	limitColour = color.RGBA{0, 0, 0, 255}       // the SLO and the compliance target
)

// Figure writes sweep.png to path: the violation rate (left) and the p95
// latency (right) against the CPU per task on a log axis; lines are the
// aggregates over placements (the points of sum), grey marks the single
// placements (rows), dashed black lines the compliance target and the SLO.
func Figure(path string, sum Summary, rows []Row) error {
	viol := newPanel("CPU per task (millicores, log)", "violation rate (%)")
	lat := newPanel("CPU per task (millicores, log)", "p95 latency (ms, log)")
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = plot.LogTicks{Prec: -1}

	var vPts, medPts, meanPts, vRuns, pRuns plotter.XYs
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range sum.Points {
		x := pt.CPUMillicores
		lo, hi = min(lo, x), max(hi, x)
		vPts = append(vPts, plotter.XY{X: x, Y: 100 * float64(pt.ViolationRate)})
		medPts = append(medPts, plotter.XY{X: x, Y: positive(float64(pt.MedianP95MS))})
		meanPts = append(meanPts, plotter.XY{X: x, Y: positive(float64(pt.MeanP95MS))})
	}
	for _, r := range rows {
		vRuns = append(vRuns, plotter.XY{X: r.CPUMillicores, Y: 100 * r.ViolationRate})
		pRuns = append(pRuns, plotter.XY{X: r.CPUMillicores, Y: positive(r.MedianP95MS)})
	}
	if len(vPts) == 0 {
		return fmt.Errorf("eval: sweep figure: no points")
	}
	if err := addRuns(viol, vRuns); err != nil {
		return err
	}
	if err := addRuns(lat, pRuns); err != nil {
		return err
	}
	if err := addLine(viol, vPts, lineColour, nil, "mean over placements"); err != nil {
		return err
	}
	if err := addLine(lat, medPts, lineColour, nil, "median p95"); err != nil {
		return err
	}
	if err := addLine(lat, meanPts, meanColour, []vg.Length{vg.Points(6), vg.Points(3)}, "mean p95"); err != nil {
		return err
	}
	if err := addLimit(viol, lo, hi, 100*ComplianceTarget, "compliance target (5%)"); err != nil {
		return err
	}
	if sum.SLOMS > 0 {
		if err := addLimit(lat, lo, hi, sum.SLOMS, "SLO ("+strconv.FormatFloat(sum.SLOMS, 'f', -1, 64)+" ms)"); err != nil {
			return err
		}
	}
	viol.Y.Min = 0
	viol.Y.Max = math.Max(viol.Y.Max*1.15, 10)
	lat.Y.Max *= 2.5 // room for the legend
	title := fmt.Sprintf("static allocation sweep: %s / %s, scenario %s, %d placements × %d intervals",
		sum.Profile, sum.Trace, sum.Scenario, len(sum.PlacementSeeds), sum.Steps)
	return pngplot.Write(path, title, [][]*plot.Plot{{viol, lat}}, 6*vg.Inch, 4.2*vg.Inch)
}

// positive keeps latencies drawable on a log axis, ms.
func positive(ms float64) float64 { return math.Max(ms, 0.1) }

func newPanel(x, y string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = 0.25 * vg.Inch
	p.Add(plotter.NewGrid())
	return p
}

func addRuns(p *plot.Plot, xy plotter.XYs) error {
	s, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	s.GlyphStyle.Color = runColour
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	s.GlyphStyle.Radius = vg.Points(2)
	p.Add(s)
	p.Legend.Add("single placements", s)
	return nil
}

func addLine(p *plot.Plot, xy plotter.XYs, c color.Color, dashes []vg.Length, name string) error {
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.8), dashes
	pts.GlyphStyle.Color, pts.GlyphStyle.Radius, pts.GlyphStyle.Shape = c, vg.Points(2.5), draw.CircleGlyph{}
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

func addLimit(p *plot.Plot, x0, x1, y float64, name string) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = limitColour, vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
