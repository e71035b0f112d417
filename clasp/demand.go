package clasp

import (
	"math"
	"sort"
)

// Demand is the projected load the plan must carry (paper §4.2).
type Demand struct {
	// Scale is s = λ_p/Λ, the factor by which measured rates are projected
	// to the input rate (1 when Measured is false).
	Scale float64
	// Measured is true when the demand was projected from the workers'
	// measurements, false when it was derived from the app's nominal ratios
	// because nothing was measured yet (Λ = 0 or no executions).
	Measured bool
	// Exec is D_o = s·Σ_w N_{w,o}, executions/s per operator.
	Exec []float64
	// ExecUS is τ̄_o, the execution-weighted mean of τ̄_{w,o} over workers, µs
	// (the app's nominal ExecUS where o ran nowhere).
	ExecUS []float64
	// Edge is E_e = s·Σ_w E^e_w, requests/s per edge.
	Edge []float64
}

// Work is D_o·τ̄_o, operator o's execution work, µs/s.
func (d Demand) Work(o int) float64 { return d.Exec[o] * d.ExecUS[o] }

// Derive projects the observation's measurements to its input rate (paper
// §4.2): s = λ_p/Λ, D_o = s·Σ_w N_{w,o}, E_e = s·Σ_w E^e_w. Without
// measurements (Λ = 0 or no execution anywhere) it falls back to the app's
// nominal ratios at λ_p (App.NominalDemand). The observation must be valid.
func Derive(ob *Observation) Demand {
	app := &ob.App
	nOps := len(app.Operators)
	d := Demand{Scale: 1, Exec: make([]float64, nOps), ExecUS: make([]float64, nOps), Edge: make([]float64, len(app.Edges))}
	busy := make([]float64, nOps) // Σ_w N_{w,o}·τ̄_{w,o}
	var total float64
	for _, w := range ob.Workers {
		for o := range nOps {
			n := at(w.Exec, o)
			if n > 0 {
				d.Exec[o] += n
				busy[o] += n * at(w.ExecUS, o)
			}
		}
		for e := range app.Edges {
			d.Edge[e] += at(w.EdgeRate, e)
		}
	}
	for o := range nOps {
		total += d.Exec[o]
		if d.Exec[o] > 0 && busy[o] > 0 {
			d.ExecUS[o] = busy[o] / d.Exec[o]
		} else {
			d.ExecUS[o] = app.Operators[o].ExecUS
		}
	}
	if ob.Throughput > 0 && total > 0 {
		d.Measured = true
		d.Scale = ob.InputRate / ob.Throughput
		for o := range d.Exec {
			d.Exec[o] *= d.Scale
		}
		for e := range d.Edge {
			d.Edge[e] *= d.Scale
		}
		return d
	}
	d.Exec, d.Edge = app.NominalDemand(ob.InputRate)
	return d
}

// DerivePropagated projects the measurements to the input rate by
// propagation instead of one scale factor: every source gets λ_p, and each
// edge carries its sender's projected executions times the edge's measured
// ratio E_e/N_o (the nominal ratio where the sender ran nowhere), in
// topological order. In steady state (every operator keeps up) this equals
// Derive's s·D_o; while a backlog drains or a pipeline fills, operators are
// out of phase — downstream ones execute more, or less, than the current
// throughput Λ implies — and s = λ_p/Λ mis-sizes the plan, where the
// measured ratios do not. Execution times and Measured are Derive's; Scale
// is the ratio of projected to measured executions. Our addition to the
// paper's projection (see Config.Propagate).
func DerivePropagated(ob *Observation) Demand {
	d := Derive(ob)
	if !d.Measured {
		return d
	}
	app := &ob.App
	nOps := len(app.Operators)
	n, sent := ob.totals()
	exec := make([]float64, nOps)
	edge := make([]float64, len(app.Edges))
	for _, src := range app.Sources() {
		exec[src] = ob.InputRate
	}
	var before, after float64
	for _, o := range app.TopoOrder() {
		for _, e := range app.outEdges(o) {
			ratio := app.Edges[e].Ratio
			if n[o] > 0 {
				ratio = sent[e] / n[o]
			}
			edge[e] = exec[o] * ratio
			exec[app.Edges[e].To] += edge[e]
		}
		before += n[o]
		after += exec[o]
	}
	d.Exec, d.Edge = exec, edge
	if before > 0 {
		d.Scale = after / before
	}
	return d
}

// scaled returns d with every rate multiplied by f (Scale too).
func (d Demand) scaled(f float64) Demand {
	out := Demand{Scale: d.Scale * f, Measured: d.Measured, ExecUS: d.ExecUS,
		Exec: make([]float64, len(d.Exec)), Edge: make([]float64, len(d.Edge))}
	for o, x := range d.Exec {
		out.Exec[o] = x * f
	}
	for e, x := range d.Edge {
		out.Edge[e] = x * f
	}
	return out
}

// Parallelism returns P_o for every operator (paper §4.4): the total
// P_tot = round(s·P_tot^cur) (at least one per operator) is split in
// proportion to the work D_o·τ̄_o. When there is no current parallelism or
// no measurement, P_tot = ⌈Σ_o D_o·τ̄_o / 10⁶⌉, the number of fully busy
// executors the work needs.
//
// Rounding: the quota of operator o is q_o = P_tot·w_o/Σw with w_o = D_o·τ̄_o.
// Operators whose quota is below 1 get exactly 1 and leave the pool, and the
// quotas of the rest are recomputed over the remaining total until every
// remaining quota is at least 1; the rest are then apportioned by the
// largest-remainder (Hamilton) method, ties to the lower operator index. The
// result sums to P_tot exactly, gives every operator at least 1, and is
// exactly proportional when the quotas are integers. Equal weights are used
// when all work is zero.
func Parallelism(d Demand, current []int) []int {
	n := len(d.Exec)
	var cur int
	for _, p := range current {
		cur += p
	}
	var work float64
	for o := range n {
		work += d.Work(o)
	}
	var total int
	if cur > 0 && d.Measured {
		total = int(math.Round(d.Scale * float64(cur)))
	} else {
		total = int(math.Ceil(work/1e6 - 1e-9))
	}
	total = max(total, n)
	weights := make([]float64, n)
	for o := range n {
		weights[o] = d.Work(o)
	}
	if work <= 0 {
		for o := range weights {
			weights[o] = 1
		}
	}
	return apportionMinOne(weights, total)
}

// apportionMinOne apportions total ≥ len(weights) seats in proportion to
// weights, at least one each (see Parallelism).
func apportionMinOne(weights []float64, total int) []int {
	n := len(weights)
	var all float64
	for _, w := range weights {
		all += w
	}
	if all <= 0 {
		weights = make([]float64, n)
		for o := range weights {
			weights[o] = 1
		}
	}
	seats := make([]int, n)
	fixed := make([]bool, n)
	left := total
	for {
		var sum float64
		for o := range n {
			if !fixed[o] {
				sum += weights[o]
			}
		}
		changed := false
		for o := range n {
			if !fixed[o] && (sum <= 0 || float64(left)*weights[o]/sum < 1) {
				fixed[o], seats[o] = true, 1
				left--
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	rest := make([]float64, n)
	for o := range n {
		if !fixed[o] {
			rest[o] = weights[o]
		}
	}
	for o, k := range largestRemainder(rest, left) {
		seats[o] += k
	}
	return seats
}

// largestRemainder apportions total ≥ 0 seats in proportion to weights ≥ 0
// (not all zero) by Hamilton's method; ties go to the lower index.
func largestRemainder(weights []float64, total int) []int {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	seats := make([]int, len(weights))
	if total <= 0 || sum <= 0 {
		return seats
	}
	rem := make([]float64, len(weights))
	given := 0
	for i, w := range weights {
		q := float64(total) * w / sum
		seats[i] = int(math.Floor(q))
		rem[i] = q - float64(seats[i])
		given += seats[i]
	}
	idx := make([]int, len(weights))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return rem[idx[a]] > rem[idx[b]] })
	for k := 0; given < total; k++ {
		seats[idx[k%len(idx)]]++
		given++
	}
	for given > total { // floating excess (cannot happen with exact floors, kept for safety)
		for i := len(seats) - 1; i >= 0 && given > total; i-- {
			if seats[i] > 0 {
				seats[i]--
				given--
			}
		}
	}
	return seats
}
