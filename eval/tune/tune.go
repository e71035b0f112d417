package tune

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"streamscale/eval/paired"
)

// EvaluationPlacements are the placement seeds the evaluation reports on
// (paired.DefaultPlacements); a tuning plan may not use them.
var EvaluationPlacements = paired.DefaultPlacements

// DevelopmentPlacements are the default tuning placements: the training
// placements of the shipped policies (the paper's 42 and 37, and 2001–2005
// of -train-placements 7) and the development placements 1001–1003.
var DevelopmentPlacements = []uint64{42, 37, 2001, 2002, 2003, 2004, 2005, 1001, 1002, 1003}

// Axis is one parameter of a grid: its key in the controller spec and
// the values tried, in order.
type Axis struct {
	Key    string
	Values []float64
}

// ParseGrid parses "key=v1,v2:key2=v3,…" into axes, refusing an empty or
// repeated key, an empty list, a repeated value and a value that is not a
// finite number.
func ParseGrid(s string) ([]Axis, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("tune: empty grid")
	}
	var axes []Axis
	for _, part := range strings.Split(s, ":") {
		k, vs, ok := strings.Cut(part, "=")
		if !ok || k == "" || vs == "" {
			return nil, fmt.Errorf("tune: grid part %q, want KEY=V1,V2,…", part)
		}
		for _, a := range axes {
			if a.Key == k {
				return nil, fmt.Errorf("tune: grid key %q repeated", k)
			}
		}
		a := Axis{Key: k}
		for _, v := range strings.Split(vs, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("tune: grid key %s: %q is not a number", k, v)
			}
			if slices.Contains(a.Values, x) {
				return nil, fmt.Errorf("tune: grid key %s: value %g repeated", k, x)
			}
			a.Values = append(a.Values, x)
		}
		axes = append(axes, a)
	}
	return axes, nil
}

// Specs expands base and the grid into controller specs, the first axis
// varying slowest: base + ":k1=v:k2=w…". base itself (the rule's default
// configuration) is not among them.
func Specs(base string, axes []Axis) []string {
	specs := []string{base}
	for _, a := range axes {
		var next []string
		for _, s := range specs {
			for _, v := range a.Values {
				next = append(next, s+":"+a.Key+"="+strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		specs = next
	}
	return specs
}

// CheckPlacements refuses a tuning placement that is an evaluation one.
func CheckPlacements(placements []uint64) error {
	if len(placements) == 0 {
		return errors.New("tune: no placements")
	}
	for _, p := range placements {
		if slices.Contains(EvaluationPlacements, p) {
			return fmt.Errorf("tune: placement %d is an evaluation placement (101–110): tune on training or development placements only", p)
		}
	}
	return nil
}

// Cell is one grid point's means over the tuning placements in one
// profile × trace.
type Cell struct {
	Profile       string     `json:"profile"`
	Trace         string     `json:"trace"`
	ViolationRate paired.Num `json:"violation_rate"`
	MeanCPU       paired.Num `json:"mean_cpu_millicores"`
}

// Point is one configuration of the grid.
type Point struct {
	Spec string `json:"spec"`
	// Feasible: the mean violation rate is within the budget in every
	// cell. RelCPU is the mean over the cells of the point's mean CPU
	// relative to the default configuration's; MaxViolation the largest
	// cell violation rate.
	Feasible     bool       `json:"feasible"`
	RelCPU       paired.Num `json:"rel_cpu"`
	MaxViolation paired.Num `json:"max_violation_rate"`
	Cells        []Cell     `json:"cells"`
}

// Result is the outcome of a tuning run (tune.json).
type Result struct {
	Base       string   `json:"base"`
	Budget     float64  `json:"violation_budget"`
	Placements []uint64 `json:"placements"`
	// Points are in grid order, the default configuration first.
	Points []Point `json:"points"`
	// Chosen is the feasible point with the least RelCPU (ties: the earlier
	// in grid order); with no feasible point, the one with the least
	// MaxViolation.
	Chosen string `json:"chosen"`
}

// Choose judges the grid points of a paired summary whose controllers are
// base (the default configuration) followed by the grid's specs.
func Choose(sum paired.Summary, base string, budget float64) (Result, error) {
	if !(budget > 0 && budget < 1) {
		return Result{}, fmt.Errorf("tune: violation budget %g outside (0, 1)", budget)
	}
	ctrls := sum.Protocol.Controllers
	if len(ctrls) == 0 || ctrls[0] != base {
		return Result{}, fmt.Errorf("tune: the summary's first controller is not %s", base)
	}
	res := Result{Base: base, Budget: budget, Placements: sum.Protocol.PlacementSeeds}
	for _, spec := range ctrls {
		pt := Point{Spec: spec, Feasible: true}
		rel, maxV := 0.0, 0.0
		for _, c := range sum.Combinations {
			var me, ref *paired.ControllerStats
			for i := range c.Controllers {
				switch c.Controllers[i].Controller {
				case spec:
					me = &c.Controllers[i]
				}
				if c.Controllers[i].Controller == base {
					ref = &c.Controllers[i]
				}
			}
			if me == nil || ref == nil {
				return Result{}, fmt.Errorf("tune: cell %s/%s lacks %s or %s", c.Profile, c.Trace, spec, base)
			}
			v := float64(me.ViolationRateMean)
			pt.Cells = append(pt.Cells, Cell{Profile: c.Profile, Trace: c.Trace, ViolationRate: me.ViolationRateMean, MeanCPU: me.MeanCPU})
			rel += float64(me.MeanCPU) / float64(ref.MeanCPU)
			maxV = max(maxV, v)
			if !(v <= budget) {
				pt.Feasible = false
			}
		}
		pt.RelCPU = paired.Num(rel / float64(len(sum.Combinations)))
		pt.MaxViolation = paired.Num(maxV)
		res.Points = append(res.Points, pt)
	}
	best := -1
	for i, p := range res.Points {
		switch {
		case best < 0:
			best = i
		case p.Feasible && !res.Points[best].Feasible:
			best = i
		case p.Feasible == res.Points[best].Feasible && p.Feasible && p.RelCPU < res.Points[best].RelCPU:
			best = i
		case !p.Feasible && !res.Points[best].Feasible && p.MaxViolation < res.Points[best].MaxViolation:
			best = i
		}
	}
	res.Chosen = res.Points[best].Spec
	return res, nil
}

// Markdown renders the grid: every point with its cells' violation rates
// and mean CPU, its relative CPU and feasibility, the chosen one marked.
func Markdown(r Result) []byte {
	var b bytes.Buffer
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("| configuration | feasible | CPU vs default |")
	for _, c := range r.Points[0].Cells {
		pf(" %s / %s violations, CPU |", c.Profile, c.Trace)
	}
	pf("\n|---|---|---|")
	for range r.Points[0].Cells {
		pf("---|")
	}
	pf("\n")
	for _, p := range r.Points {
		name := "`" + p.Spec + "`"
		if p.Spec == r.Chosen {
			name = "**" + name + "** (chosen)"
		}
		feas := "no"
		if p.Feasible {
			feas = "yes"
		}
		pf("| %s | %s | %.3f |", name, feas, float64(p.RelCPU))
		for _, c := range p.Cells {
			pf(" %.2f%%, %.0f mc |", 100*float64(c.ViolationRate), float64(c.MeanCPU))
		}
		pf("\n")
	}
	return b.Bytes()
}
