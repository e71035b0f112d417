package agents

import (
	"fmt"
	"math"

	"streamscale/env"
)

// TaskRows checks the shape of obs and returns its number of task rows.
// want > 0 requires exactly that many tasks.
func TaskRows(obs env.Observation, want int) (int, error) {
	if len(obs.App) != env.AppFeatures {
		return 0, fmt.Errorf("agents: observation has %d app features, want %d", len(obs.App), env.AppFeatures)
	}
	if len(obs.Task) == 0 || len(obs.Task)%env.TaskFeatures != 0 {
		return 0, fmt.Errorf("agents: observation has %d task features, want a positive multiple of %d", len(obs.Task), env.TaskFeatures)
	}
	n := len(obs.Task) / env.TaskFeatures
	if want > 0 && n != want {
		return 0, fmt.Errorf("agents: observation has %d tasks, want %d", n, want)
	}
	return n, nil
}

// finiteTaskFeature checks that feature f of every task row is finite.
func finiteTaskFeature(obs env.Observation, f int, name string) error {
	for k := 0; k < len(obs.Task)/env.TaskFeatures; k++ {
		if v := obs.Task[k*env.TaskFeatures+f]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("agents: observation task %d feature %s is %v", k, name, v)
		}
	}
	return nil
}

// FiniteAppFeature checks that app feature f of obs is finite.
func FiniteAppFeature(obs env.Observation, f int, name string) error {
	if v := obs.App[f]; math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("agents: observation app feature %s is %v", name, v)
	}
	return nil
}

// snapToGrid returns x moved onto the grid q·k if it lies within a
// rounding error of it (de-normalizing an observed allocation,
// alloc/MaxCPU·MaxCPU, can be off by an ulp), and x otherwise.
func snapToGrid(x, q float64) float64 {
	g := math.Round(x/q) * q
	if math.Abs(x-g) <= 1e-9*math.Max(1, math.Abs(x)) {
		return g
	}
	return x
}

// ceilToGrid returns the smallest multiple of q not below x, ignoring an
// excess over a multiple smaller than a rounding error.
func ceilToGrid(x, q float64) float64 {
	return math.Ceil(x/q-1e-9) * q
}

// checkStart validates a rule's cold-start allocation (StartCPU of
// ThresholdConfig and RateConfig): 0 (off) or within [lo, hi].
func checkStart(rule string, start, lo, hi float64) error {
	if start != 0 && !(start >= lo && start <= hi) {
		return fmt.Errorf("agents: %s start allocation %v millicores outside [%v, %v] (0 is off)", rule, start, lo, hi)
	}
	return nil
}

// coldStart returns a rule's first-step target for a task it would send
// to target: the cold-start allocation start on the grid q (at most hi)
// when that is larger, and whether it was.
func coldStart(target, start, q, hi float64) (float64, bool) {
	if start > target {
		return min(ceilToGrid(start, q), hi), true
	}
	return target, false
}
