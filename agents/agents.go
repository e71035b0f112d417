package agents

import "streamscale/env"

// Controller decides, once per simulated second, what each task's CPU
// allocation should become. Implementations must be deterministic given the
// seed passed to Reset and must not retain the observation passed to Act
// (the environment reuses its buffers).
type Controller interface {
	// Reset prepares the controller for a new episode.
	Reset(seed uint64) error
	// Act returns the action for the current observation.
	Act(obs env.Observation) (env.Action, error)
}
