package claspexp

import (
	"context"
	"fmt"

	"streamscale/agents"
	"streamscale/env"
)

// StepRecord is what run keeps of one step.
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

// run plays one episode of cfg with ctrl through agents.RunEpisode and
// records every step. observe, if not nil, sees every step's Info (a
// buffer valid during the call only).
func run(cfg env.Config, ctrl agents.HorizontalController, seed uint64, observe func(t int, info env.Info)) ([]StepRecord, error) {
	e, err := env.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("claspexp: %w", err)
	}
	var recs []StepRecord
	err = agents.RunEpisode(context.Background(), e, agents.Horizontal(ctrl), seed, func(s *agents.Step) error {
		info := s.Info
		backlog := info.InFlight
		for _, q := range info.Queue {
			backlog += q
		}
		recs = append(recs, StepRecord{
			Offered: info.OfferedRate, Throughput: info.Throughput, P95MS: info.P95MS, MeanMS: info.MeanMS,
			Active: activeServers(info.Plan), Backlog: backlog, Hold: s.Action.Hold, Migration: info.Migration,
		})
		if observe != nil {
			observe(s.T, info)
		}
		return nil
	})
	if err != nil {
		return recs, fmt.Errorf("claspexp: %w", err)
	}
	return recs, nil
}
