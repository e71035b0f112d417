package claspexp

import (
	"fmt"

	"streamscale/env"
)

// StepRecord is what Run keeps of one step.
type StepRecord struct {
	Offered, Throughput float64 // events/s
	P95MS, MeanMS       float64 // end-to-end latency over the step
	// Active is the number of servers hosting a replica after the step's
	// action.
	Active    int
	Backlog   float64 // events queued at tasks or in flight at the end of the step
	Hold      bool    // the controller passed the step
	Migration env.Migration
}

// Run plays one episode of cfg with ctrl from Reset(seed) to truncation.
// The controller's first Act sees the Info of Reset with OfferedRate set to
// the first step's input rate.
// observe, if not nil, sees every step's Info (a buffer valid during the
// call only).
func Run(cfg env.Config, ctrl HorizontalController, seed uint64, observe func(t int, info env.Info)) ([]StepRecord, error) {
	e, err := env.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("claspexp: %w", err)
	}
	if err := ctrl.Reset(seed); err != nil {
		return nil, err
	}
	_, info, err := e.Reset(seed)
	if err != nil {
		return nil, err
	}
	// Before the first step nothing has arrived; the controller sees the
	// ingress rate of the first step, as a planner at the ingress would.
	info.OfferedRate = cfg.Workload.Rate(cfg.StartOffset % cfg.Workload.Len())
	var recs []StepRecord
	plan := cfg.ReplicaPlan()
	for t := 0; ; t++ {
		a, err := ctrl.Act(float64(t), info)
		if err != nil {
			return recs, fmt.Errorf("claspexp: step %d: %w", t, err)
		}
		if a.Replicas != nil {
			plan = a.Replicas
		}
		_, _, _, trunc, inf, err := e.StepAction(a)
		if err != nil {
			return recs, fmt.Errorf("claspexp: step %d: %w", t, err)
		}
		info = inf
		backlog := info.InFlight
		for _, q := range info.Queue {
			backlog += q
		}
		recs = append(recs, StepRecord{
			Offered: info.OfferedRate, Throughput: info.Throughput, P95MS: info.P95MS, MeanMS: info.MeanMS,
			Active: activeServers(plan), Backlog: backlog, Hold: a.Hold, Migration: info.Migration,
		})
		if observe != nil {
			observe(t, info)
		}
		if trunc {
			return recs, nil
		}
	}
}
