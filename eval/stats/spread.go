package stats

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// SampleSD returns the sample standard deviation of x,
//
//	s = √( Σ (x_i − x̄)² / (n − 1) ),
//
// with the mean x̄ = Σ x_i / n taken first (two passes, index order). It
// returns 0 for fewer than two values.
func SampleSD(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

// StdErr returns the standard error of the mean of x, SampleSD(x)/√n (0
// for fewer than two values).
func StdErr(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	return SampleSD(x) / math.Sqrt(float64(len(x)))
}

// Ranked is one named group's keys, compared lexicographically (the first
// key decides, the next breaks its ties, …): for the simulator-gap ranking
// a controller's mean violation rate, then its mean CPU.
type Ranked struct {
	Name string
	Keys []float64
}

// CompareKeys orders a and b lexicographically by their keys (as
// cmp.Compare orders floats); 0 means a tie on every key. Keys missing
// from the shorter slice compare as ties.
func CompareKeys(a, b Ranked) int {
	for i := range min(len(a.Keys), len(b.Keys)) {
		if c := cmp.Compare(a.Keys[i], b.Keys[i]); c != 0 {
			return c
		}
	}
	return 0
}

// GroupMeans returns, for every distinct name in xs in the order of its
// first appearance, the mean of each key over that name's entries (sums
// in index order, divided once). Every entry of a name must carry as many
// keys as its first.
func GroupMeans(xs []Ranked) []Ranked {
	var out []Ranked
	var n []float64
	for _, x := range xs {
		i := slices.IndexFunc(out, func(m Ranked) bool { return m.Name == x.Name })
		if i < 0 {
			out, n = append(out, Ranked{Name: x.Name, Keys: make([]float64, len(x.Keys))}), append(n, 0)
			i = len(out) - 1
		}
		for k := range out[i].Keys {
			out[i].Keys[k] += x.Keys[k]
		}
		n[i]++
	}
	for i := range out {
		for k := range out[i].Keys {
			out[i].Keys[k] /= n[i]
		}
	}
	return out
}

// Order lists the names of xs from the smallest keys to the largest
// (CompareKeys), ties on every key by name.
func Order(xs []Ranked) []string {
	s := slices.Clone(xs)
	slices.SortStableFunc(s, func(a, b Ranked) int {
		if c := CompareKeys(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make([]string, len(s))
	for i, m := range s {
		out[i] = m.Name
	}
	return out
}

// Discordant lists the pairs of names (in a's order) that a and b order in
// opposite directions (CompareKeys). A pair that either side ties on every
// key is not ordered by it and is never discordant, nor is a pair with a
// name missing from b.
func Discordant(a, b []Ranked) [][2]string {
	find := func(name string) (Ranked, bool) {
		i := slices.IndexFunc(b, func(m Ranked) bool { return m.Name == name })
		if i < 0 {
			return Ranked{}, false
		}
		return b[i], true
	}
	var out [][2]string
	for i, x := range a {
		for _, y := range a[i+1:] {
			bx, okX := find(x.Name)
			by, okY := find(y.Name)
			if okX && okY && CompareKeys(x, y)*CompareKeys(bx, by) < 0 {
				out = append(out, [2]string{x.Name, y.Name})
			}
		}
	}
	return out
}
