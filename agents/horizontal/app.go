package horizontal

import (
	"fmt"
	"math"
	"slices"

	"streamscale/clasp"
	"streamscale/env"
)

// ClaspApp converts a simulator application to CLASP's, with execution
// times in µs of a core of refMIPSPerCore MIPS:
//
//   - task k becomes operator k with ExecUS = MIPSPerEvent / refMIPSPerCore
//     · 10⁶ (the time one event takes on one such core);
//   - edge e keeps its index; its Ratio is the selectivity of its From task
//     (the simulator delivers every output event of a task to every
//     successor, so each successor receives Selectivity requests per
//     execution);
//   - a task with state (StateMB > 0) is Stateful with StateBytes =
//     StateMB · 2²⁰;
//   - RequestBytes is the task's own OutBytes: the simulator sizes the
//     events queued at a task by that task's OutBytes when a re-plan moves
//     them, and CLASP's migration estimate should move the same bytes.
//
// CLASP's sources are the operators without predecessors and its sinks
// those without successors; an application whose Sources or Sinks differ
// from those (a source with an input edge, a sink task that also feeds
// another) cannot be expressed and is an error, as is a reference speed
// that is not a positive finite number.
func ClaspApp(a env.App, refMIPSPerCore float64) (clasp.App, error) {
	if !(refMIPSPerCore > 0) || math.IsInf(refMIPSPerCore, 0) {
		return clasp.App{}, fmt.Errorf("horizontal: reference speed %v MIPS per core, want a finite number > 0", refMIPSPerCore)
	}
	out := clasp.App{Name: a.Name}
	for k, t := range a.Tasks {
		if !(t.MIPSPerEvent > 0) || math.IsInf(t.MIPSPerEvent, 0) {
			return clasp.App{}, fmt.Errorf("horizontal: app %s: task %d (%s) has %v MI per event, want > 0", a.Name, k, t.Name, t.MIPSPerEvent)
		}
		out.Operators = append(out.Operators, clasp.Operator{
			Name:         t.Name,
			ExecUS:       t.MIPSPerEvent / refMIPSPerCore * 1e6,
			Stateful:     t.StateMB > 0,
			StateBytes:   t.StateMB * (1 << 20),
			RequestBytes: t.OutBytes,
		})
	}
	for i, e := range a.Edges {
		if e.From < 0 || e.From >= len(a.Tasks) {
			return clasp.App{}, fmt.Errorf("horizontal: app %s: edge %d leaves missing task %d", a.Name, i, e.From)
		}
		out.Edges = append(out.Edges, clasp.Edge{From: e.From, To: e.To, Ratio: a.Tasks[e.From].Selectivity})
	}
	if err := out.Validate(); err != nil {
		return clasp.App{}, fmt.Errorf("horizontal: %w", err)
	}
	srcs, sinks := sorted(a.Sources), sorted(a.Sinks)
	if !slices.Equal(srcs, out.Sources()) {
		return clasp.App{}, fmt.Errorf("horizontal: app %s: sources %v are not the tasks without predecessors %v", a.Name, srcs, out.Sources())
	}
	if !slices.Equal(sinks, out.Sinks()) {
		return clasp.App{}, fmt.Errorf("horizontal: app %s: sinks %v are not the tasks without successors %v", a.Name, sinks, out.Sinks())
	}
	return out, nil
}

func sorted(xs []int) []int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return slices.Compact(s)
}
