package clasp

import (
	"errors"
	"fmt"
	"math"

	"streamscale/internal/dag"
)

// ErrInvalid marks every error caused by malformed input (an application, an
// observation or a configuration); test with errors.Is.
var ErrInvalid = errors.New("clasp: invalid input")

// ErrCapacity is wrapped by planning errors that mean the demand does not
// fit the largest cluster the planner may use.
var ErrCapacity = errors.New("clasp: demand exceeds the cluster")

// invalidf returns "clasp: invalid input: <message>" wrapping ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Operator is one operator (a serverless function) of a stream application.
type Operator struct {
	// Name is unique within the application.
	Name string
	// ExecUS is the nominal mean execution time τ_o of one execution, µs > 0.
	// It is used only where nothing is measured (paper §6: ≈ 400 µs).
	ExecUS float64
	// Stateful marks an operator whose executions read or write keyed state;
	// its state moves with its share of demand (migration).
	Stateful bool
	// StateBytes is the operator's total keyed state, bytes ≥ 0, partitioned
	// over its workers in proportion to their shares φ_{o,w}. Zero for a
	// stateless operator.
	StateBytes float64
	// Keys is the number of distinct keys the state is partitioned by, ≥ 0.
	// With Keys > 0 the state grows as keys are first seen (StateBytes is
	// reached once every key has been; see env.Task.Keys); the planner
	// uses the current size the observation reports (Observation.StateBytes).
	Keys float64
	// RequestBytes is the size of one request addressed to the operator,
	// bytes ≥ 0; queued requests move with state during a migration.
	RequestBytes float64
}

// Edge is a chained request from operator From to its successor To (operator
// indices): every execution of From sends Ratio requests to To, each of which
// is one execution of To.
type Edge struct {
	From, To int
	// Ratio is the nominal number of requests sent to To per execution of
	// From, ≥ 0 (a filter passing half its input has Ratio 0.5). Used only
	// where nothing is measured.
	Ratio float64
}

// App is an application DAG. Operators with no incoming edge are sources: each
// external input request is one execution of every source. Operators with no
// outgoing edge are sinks.
type App struct {
	Name      string
	Operators []Operator
	Edges     []Edge
}

// Validate checks the application: at least one operator, unique non-empty
// names, finite non-negative sizes, positive execution times, edges between
// distinct existing operators without duplicates, and no cycle.
func (a *App) Validate() error {
	if len(a.Operators) == 0 {
		return invalidf("app %q has no operators", a.Name)
	}
	names := make(map[string]bool, len(a.Operators))
	for i, o := range a.Operators {
		if o.Name == "" || names[o.Name] {
			return invalidf("app %s: operator %d has an empty or duplicate name %q", a.Name, i, o.Name)
		}
		names[o.Name] = true
		if !positive(o.ExecUS) {
			return invalidf("app %s: operator %s: execution time %v µs, want > 0", a.Name, o.Name, o.ExecUS)
		}
		if !nonNegative(o.Keys) {
			return invalidf("app %s: operator %s: %v keys, want a finite count ≥ 0", a.Name, o.Name, o.Keys)
		}
		if !nonNegative(o.StateBytes) || !nonNegative(o.RequestBytes) {
			return invalidf("app %s: operator %s: state %v B or request %v B is not a finite size ≥ 0", a.Name, o.Name, o.StateBytes, o.RequestBytes)
		}
		if !o.Stateful && o.StateBytes != 0 {
			return invalidf("app %s: operator %s is stateless but has %v B of state", a.Name, o.Name, o.StateBytes)
		}
	}
	n := len(a.Operators)
	for i, e := range a.Edges {
		if e.From < 0 || e.From >= n || e.To < 0 || e.To >= n || e.From == e.To {
			return invalidf("app %s: edge %d (%d→%d) names a missing operator or is a self-loop", a.Name, i, e.From, e.To)
		}
		if !nonNegative(e.Ratio) {
			return invalidf("app %s: edge %d ratio %v, want finite ≥ 0", a.Name, i, e.Ratio)
		}
		for _, f := range a.Edges[:i] {
			if f.From == e.From && f.To == e.To {
				return invalidf("app %s: duplicate edge %d→%d", a.Name, e.From, e.To)
			}
		}
	}
	if _, err := a.topoOrder(); err != nil {
		return err
	}
	return nil
}

// topoOrder returns the operators in topological order (Kahn's algorithm,
// lowest index first among ready operators) or an error naming a cycle.
func (a *App) topoOrder() ([]int, error) {
	edges := make([][2]int, len(a.Edges))
	for i, e := range a.Edges {
		edges[i] = [2]int{e.From, e.To}
	}
	order, cycle := dag.Order(len(a.Operators), edges)
	if cycle >= 0 {
		return nil, invalidf("app %s has a cycle", a.Name)
	}
	return order, nil
}

// TopoOrder returns the operators in topological order, lowest index first
// among ready operators. The app must be valid.
func (a *App) TopoOrder() []int {
	o, err := a.topoOrder()
	if err != nil {
		return nil
	}
	return o
}

// Sources returns the operators without an incoming edge, ascending.
func (a *App) Sources() []int {
	has := make([]bool, len(a.Operators))
	for _, e := range a.Edges {
		has[e.To] = true
	}
	var s []int
	for i, h := range has {
		if !h {
			s = append(s, i)
		}
	}
	return s
}

// Sinks returns the operators without an outgoing edge, ascending.
func (a *App) Sinks() []int {
	has := make([]bool, len(a.Operators))
	for _, e := range a.Edges {
		has[e.From] = true
	}
	var s []int
	for i, h := range has {
		if !h {
			s = append(s, i)
		}
	}
	return s
}

// outEdges and inEdges return edge indices, ascending.
func (a *App) outEdges(o int) []int {
	var es []int
	for i, e := range a.Edges {
		if e.From == o {
			es = append(es, i)
		}
	}
	return es
}

func (a *App) inEdges(o int) []int {
	var es []int
	for i, e := range a.Edges {
		if e.To == o {
			es = append(es, i)
		}
	}
	return es
}

// NominalDemand returns the executions/s of every operator and the
// requests/s on every edge when rate external requests/s arrive, from the
// nominal edge ratios: N_src = rate, E_e = Ratio_e·N_From, N_o = Σ_in E_e.
// The app must be valid.
func (a *App) NominalDemand(rate float64) (exec, edge []float64) {
	exec = make([]float64, len(a.Operators))
	edge = make([]float64, len(a.Edges))
	for _, s := range a.Sources() {
		exec[s] = rate
	}
	for _, o := range a.TopoOrder() {
		for _, ei := range a.outEdges(o) {
			edge[ei] = a.Edges[ei].Ratio * exec[o]
			exec[a.Edges[ei].To] += edge[ei]
		}
	}
	return exec, edge
}

// StateTouchFraction is the share of all executions that touch state (run a
// stateful operator) under the nominal ratios: Σ_stateful N_o / Σ_o N_o.
func (a *App) StateTouchFraction() float64 {
	exec, _ := a.NominalDemand(1)
	var st, tot float64
	for i, n := range exec {
		tot += n
		if a.Operators[i].Stateful {
			st += n
		}
	}
	if tot == 0 {
		return 0
	}
	return st / tot
}

func finite(x float64) bool      { return !math.IsNaN(x) && !math.IsInf(x, 0) }
func positive(x float64) bool    { return finite(x) && x > 0 }
func nonNegative(x float64) bool { return finite(x) && x >= 0 }
