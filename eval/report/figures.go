package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"streamscale/eval/internal/pngplot"
	"streamscale/eval/paired"
	"streamscale/eval/runner"
)

// Series is the per-interval data of one run that the figures use.
type Series struct {
	Profile, Trace, Controller string
	PlacementSeed              uint64
	P95MS, Throughput, Offered []float64
	CPU                        []float64
}

// SeriesOf extracts r's series.
func SeriesOf(r runner.Result) Series {
	s := Series{Profile: r.Profile, Trace: r.Trace, Controller: r.Controller, PlacementSeed: r.PlacementSeed}
	n := len(r.Intervals)
	s.P95MS, s.Throughput, s.Offered, s.CPU = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, iv := range r.Intervals {
		s.P95MS[i], s.Throughput[i], s.Offered[i], s.CPU[i] = iv.P95MS, iv.Throughput, iv.Offered, iv.TotalCPU
	}
	return s
}

// Figure file names, in the order Figures writes them.
const (
	FigP95Time   = "p95_over_time.png"
	FigP95Paired = "p95_paired.png"
	FigViolation = "violation_rate.png"
	FigCPU       = "cpu_boxes.png"
	FigThroughpt = "throughput.png"
	FigPareto    = "pareto.png"
)

// palette holds distinguishable colours (Okabe–Ito), one per controller.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{120, 120, 120, 255}, // grey
	color.RGBA{240, 228, 66, 255},  // yellow
}

func colour(i int) color.Color { return palette[i%len(palette)] }

var sloColour = color.RGBA{200, 0, 0, 255}

// groups returns, per combination and controller, the runs' series in
// placement order.
func groups(sum paired.Summary, runs []Series) [][][]Series {
	out := make([][][]Series, len(sum.Combinations))
	for ci, c := range sum.Combinations {
		out[ci] = make([][]Series, len(c.Controllers))
		for k, cs := range c.Controllers {
			for _, r := range runs {
				if r.Profile == c.Profile && r.Trace == c.Trace && r.Controller == cs.Controller {
					out[ci][k] = append(out[ci][k], r)
				}
			}
		}
	}
	return out
}

// pointwiseMean averages the series elementwise (over placements), in
// order; the result has the shortest length.
func pointwiseMean(runs []Series, f func(Series) []float64) []float64 {
	if len(runs) == 0 {
		return nil
	}
	n := len(f(runs[0]))
	for _, r := range runs {
		n = min(n, len(f(r)))
	}
	m := make([]float64, n)
	for _, r := range runs {
		for i, v := range f(r)[:n] {
			m[i] += v
		}
	}
	for i := range m {
		m[i] /= float64(len(runs))
	}
	return m
}

// Figures writes the six PNG figures of a paired evaluation into dir,
// drawing them concurrently, and returns their file names in a fixed
// order. Each figure has one panel per profile (rows) ×
// workload (columns).
func Figures(dir string, sum paired.Summary, runs []Series) ([]string, error) {
	g := groups(sum, runs)
	figs := []struct {
		name  string
		title string
		panel func(c paired.Combination, runs [][]Series) (*plot.Plot, error)
	}{
		{FigP95Time, "p95 latency over time (mean over placements; dashed red: SLO)", p95TimePanel},
		{FigP95Paired, "per-run mean p95 latency; grey lines join the runs of one placement; dashed red: SLO", p95PairedPanel},
		{FigViolation, "SLO violation rate (bars: mean; points: placements; whiskers: 95% bootstrap CI)", violationPanel},
		{FigCPU, "total CPU allocation per interval (all placements)", cpuPanel},
		{FigThroughpt, fmt.Sprintf("throughput shortfall, (offered − achieved) / offered (mean over placements, %d s moving average)", smoothWindow), throughputPanel},
		{FigPareto, "reserved CPU against violation rate: each controller's mean with 95% CIs (large) and placements (small); lower left dominates; ▲ off scale", paretoPanel},
	}
	// Each figure is drawn by its own goroutine into its own file.
	var eg errgroup.Group
	eg.SetLimit(runtime.GOMAXPROCS(0))
	names := make([]string, len(figs))
	for i, f := range figs {
		names[i] = f.name
		eg.Go(func() error {
			if err := writeGrid(filepath.Join(dir, f.name), f.title, sum, g, f.panel); err != nil {
				return fmt.Errorf("eval: figure %s: %w", f.name, err)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return names, nil
}

func writeGrid(path, title string, sum paired.Summary, g [][][]Series, panel func(paired.Combination, [][]Series) (*plot.Plot, error)) error {
	rows, cols := len(sum.Protocol.Profiles), len(sum.Protocol.Traces)
	if rows*cols != len(sum.Combinations) || rows == 0 {
		return fmt.Errorf("%d combinations for %d profiles × %d traces", len(sum.Combinations), rows, cols)
	}
	plots := make([][]*plot.Plot, rows)
	for r := range rows {
		plots[r] = make([]*plot.Plot, cols)
		for c := range cols {
			i := r*cols + c
			p, err := panel(sum.Combinations[i], g[i])
			if err != nil {
				return err
			}
			comb := sum.Combinations[i]
			p.Title.Text = fmt.Sprintf("%s / %s (SLO %g ms)", comb.Profile, comb.Trace, comb.SLOMS)
			p.Title.TextStyle.Font.Size = vg.Points(12)
			plots[r][c] = p
		}
	}
	return pngplot.Write(path, title, plots, 6.5*vg.Inch, 4.2*vg.Inch)
}

func newPanel(x, y string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = 0.25 * vg.Inch
	p.Add(plotter.NewGrid())
	return p
}

// logFloor keeps values positive for log axes, ms.
const logFloor = 1.0

func useLogY(p *plot.Plot) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
}

// padLogY widens a log axis (after every plotter is added) so lines at
// the extremes stay visible and the legend has room at the top.
func padLogY(p *plot.Plot, top float64) {
	p.Y.Min = math.Max(p.Y.Min/1.6, logFloor/2)
	p.Y.Max *= top
}

// plainTicks are gonum's default ticks labelled with the shortest
// representation ("2500", not "2500.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// dashes gives controller k's line a dash pattern, so that overlapping
// lines of different controllers stay distinguishable.
func dashes(k int) []vg.Length {
	switch k % 4 {
	case 1:
		return []vg.Length{vg.Points(6), vg.Points(3)}
	case 2:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	case 3:
		return []vg.Length{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}
	}
	return nil
}

// smoothWindow is the moving-average window of the throughput figure, in
// intervals.
const smoothWindow = 60

// movingMean returns the centred moving average of x over w points
// (truncated at the ends), summed in order.
func movingMean(x []float64, w int) []float64 {
	out := make([]float64, len(x))
	h := w / 2
	for i := range x {
		lo, hi := max(i-h, 0), min(i+h+1, len(x))
		s := 0.0
		for _, v := range x[lo:hi] {
			s += v
		}
		out[i] = s / float64(hi-lo)
	}
	return out
}

func sloLine(p *plot.Plot, x0, x1, slo float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: slo}, {X: x1, Y: slo}})
	if err != nil {
		return err
	}
	l.Color = sloColour
	l.Width = vg.Points(1.5)
	l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(l)
	return nil
}

func p95TimePanel(c paired.Combination, runs [][]Series) (*plot.Plot, error) {
	p := newPanel("interval (s)", "p95 latency (ms, log)")
	useLogY(p)
	n := 0
	for k, cs := range c.Controllers {
		m := pointwiseMean(runs[k], func(s Series) []float64 { return s.P95MS })
		n = max(n, len(m))
		xy := make(plotter.XYs, len(m))
		for i, v := range m {
			xy[i] = plotter.XY{X: float64(i), Y: math.Max(v, logFloor)}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = colour(k)
		l.Width = vg.Points(1)
		l.Dashes = dashes(k)
		p.Add(l)
		p.Legend.Add(cs.Controller, l)
	}
	if err := sloLine(p, 0, float64(max(n-1, 1)), c.SLOMS); err != nil {
		return nil, err
	}
	padLogY(p, 8)
	return p, nil
}

func controllerNames(c paired.Combination) []string {
	names := make([]string, len(c.Controllers))
	for k, cs := range c.Controllers {
		names[k] = cs.Controller
	}
	return names
}

func p95PairedPanel(c paired.Combination, runs [][]Series) (*plot.Plot, error) {
	p := newPanel("", "per-run mean p95 (ms, log)")
	useLogY(p)
	nP := 0
	for _, cs := range c.Controllers {
		nP = max(nP, len(cs.PerRun))
	}
	for l := range nP {
		var xy plotter.XYs
		for k, cs := range c.Controllers {
			if l < len(cs.PerRun) {
				xy = append(xy, plotter.XY{X: float64(k), Y: math.Max(float64(cs.PerRun[l].MeanP95MS), logFloor)})
			}
		}
		ln, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		ln.Color = color.RGBA{150, 150, 150, 255}
		ln.Width = vg.Points(0.6)
		p.Add(ln)
	}
	for k, cs := range c.Controllers {
		xy := make(plotter.XYs, len(cs.PerRun))
		for l, rv := range cs.PerRun {
			xy[l] = plotter.XY{X: float64(k), Y: math.Max(float64(rv.MeanP95MS), logFloor)}
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		sc.Color = colour(k)
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(3)
		p.Add(sc)
	}
	if err := sloLine(p, -0.3, float64(len(c.Controllers))-0.7, c.SLOMS); err != nil {
		return nil, err
	}
	p.NominalX(controllerNames(c)...)
	p.X.Min, p.X.Max = -0.5, float64(len(c.Controllers))-0.5
	padLogY(p, 1.6)
	return p, nil
}

// ciErrors holds points with asymmetric vertical error bars.
type ciErrors struct {
	plotter.XYs
	plotter.YErrors
}

// offScaleShare is the mean violation rate (a fraction) above which a
// controller is starved: it does not set the violation axis of a figure,
// which is zoomed to the others and marks it off scale instead.
const offScaleShare = 0.25

// violationTop is the top of a cell's violation axis, percent: a quarter
// above the highest CI bound among the controllers that are not starved,
// and at least 1%.
func violationTop(c paired.Combination) float64 {
	top := 1.0
	for _, cs := range c.Controllers {
		if float64(cs.ViolationRateMean) > offScaleShare {
			continue
		}
		hi := float64(cs.ViolationRateCI[1])
		if math.IsNaN(hi) {
			hi = float64(cs.ViolationRateMean)
		}
		top = max(top, 1.25*100*hi)
	}
	return top
}

// offScale names a controller whose mean violation rate is above the
// axis top with its value, e.g. "static:500 (78.9% ↑)".
func offScale(cs paired.ControllerStats, top float64) (string, bool) {
	v := 100 * float64(cs.ViolationRateMean)
	if v <= top {
		return cs.Controller, false
	}
	return fmt.Sprintf("%s (%.1f%% ↑)", cs.Controller, v), true
}

// nominalNames labels a nominal axis with the controllers (off-scale ones
// with their value) and slants the labels so long names do not overlap.
func nominalNames(p *plot.Plot, c paired.Combination, top float64) {
	names := make([]string, len(c.Controllers))
	for k, cs := range c.Controllers {
		names[k], _ = offScale(cs, top)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 7
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.X.Min, p.X.Max = -0.5, float64(len(c.Controllers))-0.5
}

func violationPanel(c paired.Combination, _ [][]Series) (*plot.Plot, error) {
	p := newPanel("", "violation rate (% of intervals)")
	top := violationTop(c)
	p.Y.Min, p.Y.Max = 0, top
	clip := func(v float64) float64 { return min(v, top) }
	for k, cs := range c.Controllers {
		mean := 100 * float64(cs.ViolationRateMean)
		bar, err := plotter.NewBarChart(plotter.Values{clip(mean)}, 0.35*vg.Inch)
		if err != nil {
			return nil, err
		}
		bar.XMin = float64(k)
		bar.Color = lighten(colour(k))
		bar.LineStyle.Color = colour(k)
		p.Add(bar)
		if _, off := offScale(cs, top); off {
			continue // its value is in the axis label
		}
		pts := make(plotter.XYs, 0, len(cs.PerRun))
		for l, rv := range cs.PerRun {
			off := 0.0
			if len(cs.PerRun) > 1 {
				off = (float64(l)/float64(len(cs.PerRun)-1) - 0.5) * 0.3
			}
			if v := 100 * float64(rv.ViolationRate); v <= top {
				pts = append(pts, plotter.XY{X: float64(k) + off, Y: v})
			}
		}
		if len(pts) > 0 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.Color = color.Black
			sc.Shape = draw.CircleGlyph{}
			sc.Radius = vg.Points(2)
			p.Add(sc)
		}
		lo, hi := float64(cs.ViolationRateCI[0]), float64(cs.ViolationRateCI[1])
		if !math.IsNaN(lo) && !math.IsNaN(hi) {
			eb, err := plotter.NewYErrorBars(ciErrors{
				XYs:     plotter.XYs{{X: float64(k), Y: mean}},
				YErrors: plotter.YErrors{{Low: mean - 100*lo, High: clip(100*hi) - mean}},
			})
			if err != nil {
				return nil, err
			}
			eb.LineStyle.Width = vg.Points(1.5)
			eb.CapWidth = vg.Points(10)
			p.Add(eb)
		}
	}
	nominalNames(p, c, top)
	return p, nil
}

func lighten(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	f := func(v uint32) uint8 { return uint8((v>>8)/2 + 127) }
	return color.RGBA{f(r), f(g), f(b), 255}
}

func cpuPanel(c paired.Combination, runs [][]Series) (*plot.Plot, error) {
	p := newPanel("", "total CPU (millicores, log scale)")
	for k := range c.Controllers {
		var v plotter.Values
		for _, r := range runs[k] {
			v = append(v, r.CPU...)
		}
		if len(v) == 0 {
			continue
		}
		b, err := plotter.NewBoxPlot(0.4*vg.Inch, float64(k), v)
		if err != nil {
			return nil, err
		}
		b.FillColor = lighten(colour(k))
		b.BoxStyle.Color = colour(k)
		b.MedianStyle.Width = vg.Points(2)
		b.GlyphStyle.Radius = vg.Points(1.2)
		b.GlyphStyle.Color = colour(k)
		p.Add(b)
	}
	nominalNames(p, c, math.Inf(1))
	useLogY(p) // a generous static allocation must not flatten the others
	return p, nil
}

// throughputPanel draws each controller's throughput shortfall over time,
// (offered − achieved) / offered in percent, pointwise mean over the
// placements and smoothed: 0 while a controller keeps up, positive while
// a backlog builds, negative while it drains. Offered and achieved
// throughput themselves overlap for every controller that keeps up,
// which hid the differences. Starved controllers (above offScaleShare
// violations) do not set the axis: their lines leave it at the top.
func throughputPanel(c paired.Combination, runs [][]Series) (*plot.Plot, error) {
	p := newPanel("interval (s)", "throughput shortfall (% of offered)")
	top, bottom := 1.0, -1.0
	for k, cs := range c.Controllers {
		if len(runs[k]) == 0 {
			continue
		}
		off := pointwiseMean(runs[k], func(s Series) []float64 { return s.Offered })
		got := pointwiseMean(runs[k], func(s Series) []float64 { return s.Throughput })
		short := make([]float64, len(off))
		for i := range off {
			if off[i] > 0 {
				short[i] = 100 * (off[i] - got[i]) / off[i]
			}
		}
		short = movingMean(short, smoothWindow)
		xy := make(plotter.XYs, len(short))
		for i, v := range short {
			xy[i] = plotter.XY{X: float64(i), Y: v}
			if float64(cs.ViolationRateMean) <= offScaleShare {
				top, bottom = max(top, v), min(bottom, v)
			}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = colour(k)
		l.Width = vg.Points(1)
		l.Dashes = dashes(k)
		p.Add(l)
		name := cs.Controller
		if float64(cs.ViolationRateMean) > offScaleShare {
			name += " (off scale)"
		}
		p.Legend.Add(name, l)
	}
	p.Y.Min, p.Y.Max = 1.2*bottom, 1.6*top // room for the legend
	return p, nil
}

// paretoPanel draws every controller's reserved CPU (x, log scale) against
// its violation rate (y): the mean over placements as a large labelled
// point and each placement as a small one, so a reader sees at once who
// dominates whom (lower and further left is better on both).
func paretoPanel(c paired.Combination, _ [][]Series) (*plot.Plot, error) {
	p := newPanel("reserved CPU (millicores, log scale)", "violation rate (% of intervals)")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	top := violationTop(c)
	p.Y.Min, p.Y.Max = 0, top
	lo, hi := math.Inf(1), 0.0
	for k, cs := range c.Controllers {
		name, off := offScale(cs, top)
		pts := make(plotter.XYs, 0, len(cs.PerRun))
		for _, rv := range cs.PerRun {
			x := max(float64(rv.ReservedCPU), 1)
			lo, hi = min(lo, x), max(hi, x)
			if y := 100 * float64(rv.ViolationRate); y <= top {
				pts = append(pts, plotter.XY{X: x, Y: y})
			}
		}
		if len(pts) > 0 && !off {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.Color = lighten(colour(k))
			sc.Shape = draw.CircleGlyph{}
			sc.Radius = vg.Points(2)
			p.Add(sc)
		}
		x, y := max(float64(cs.MeanReservedCPU), 1), 100*float64(cs.ViolationRateMean)
		if off {
			y = 0.97 * top
		}
		m, err := plotter.NewScatter(plotter.XYs{{X: x, Y: y}})
		if err != nil {
			return nil, err
		}
		m.Color = colour(k)
		m.Shape = draw.CircleGlyph{}
		if off {
			m.Shape = draw.PyramidGlyph{}
		}
		m.Radius = vg.Points(5)
		p.Add(m)
		p.Legend.Add(name, m)
		if off {
			continue
		}
		// The mean's 95% CIs: violation rate (vertical) and reserved CPU
		// (horizontal).
		if vlo, vhi := float64(cs.ViolationRateCI[0]), float64(cs.ViolationRateCI[1]); !math.IsNaN(vlo) && !math.IsNaN(vhi) {
			eb, err := plotter.NewYErrorBars(ciErrors{XYs: plotter.XYs{{X: x, Y: y}}, YErrors: plotter.YErrors{{Low: y - 100*vlo, High: min(100*vhi, top) - y}}})
			if err != nil {
				return nil, err
			}
			eb.Color, eb.CapWidth = colour(k), vg.Points(6)
			p.Add(eb)
		}
		if rlo, rhi := float64(cs.ReservedCPUCI[0]), float64(cs.ReservedCPUCI[1]); !math.IsNaN(rlo) && !math.IsNaN(rhi) && rlo > 0 {
			eb, err := plotter.NewXErrorBars(ciXErrors{XYs: plotter.XYs{{X: x, Y: y}}, XErrors: plotter.XErrors{{Low: x - rlo, High: rhi - x}}})
			if err != nil {
				return nil, err
			}
			eb.Color, eb.CapWidth = colour(k), vg.Points(6)
			p.Add(eb)
		}
	}
	if hi > 0 {
		p.X.Min, p.X.Max = lo/1.5, hi*1.5
	}
	p.Legend.Top = true
	return p, nil
}

// ciXErrors holds points with asymmetric horizontal error bars.
type ciXErrors struct {
	plotter.XYs
	plotter.XErrors
}
