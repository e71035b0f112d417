package agents

import (
	"fmt"
	"math"

	"streamscale/env"
)

// Static holds every task at a fixed allocation (millicores). It gives the
// environment a target allocation each step; the environment clips it to
// the allocation bounds and projects it onto server capacity.
type Static struct {
	millicores float64
	targets    []float64
}

// NewStatic returns a Static controller at millicores per task.
func NewStatic(millicores float64) (*Static, error) {
	if !(millicores > 0) || math.IsInf(millicores, 0) {
		return nil, fmt.Errorf("agents: static allocation %v millicores, want a positive number", millicores)
	}
	return &Static{millicores: millicores}, nil
}

// Millicores is the fixed allocation.
func (s *Static) Millicores() float64 { return s.millicores }

// Reset implements Controller.
func (s *Static) Reset(uint64) error { return nil }

// Act implements Controller.
func (s *Static) Act(obs env.Observation) (env.Action, error) {
	n := obs.NumTasks()
	if n == 0 || len(obs.Task) != n*env.TaskFeatures {
		return env.Action{}, fmt.Errorf("agents: observation has %d task features, want a multiple of %d", len(obs.Task), env.TaskFeatures)
	}
	if cap(s.targets) < n {
		s.targets = make([]float64, n)
	}
	t := s.targets[:n]
	for k := range t {
		t[k] = s.millicores
	}
	return env.Action{Targets: t}, nil
}
