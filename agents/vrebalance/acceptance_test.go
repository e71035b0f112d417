package vrebalance_test

import (
	"testing"

	"streamscale/agents"
	"streamscale/agents/controllertest"
	"streamscale/agents/vrebalance"
	"streamscale/env"
)

func TestVRebalanceAcceptance(t *testing.T) {
	// A 20-step interval gives 19 evaluations in the 400-step episode, so
	// the GP (after 5 random points per tier) runs too.
	cfg := vrebalance.DefaultConfig()
	cfg.Interval = 20
	controllertest.RunScenario(t, "vrebalance", func(sc env.Config) (agents.Controller, error) {
		return vrebalance.New(cfg, sc)
	})
}
