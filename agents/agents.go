package agents

import "streamscale/env"

// Controller decides, once per simulated second, what each task's CPU
// allocation should become (a vertical controller). Implementations must
// be deterministic given the seed passed to Reset and must not retain the
// observation passed to Act (the environment reuses its buffers).
type Controller interface {
	// Reset prepares the controller for a new episode.
	Reset(seed uint64) error
	// Act returns the action for the current observation.
	Act(obs env.Observation) (env.Action, error)
}

// HorizontalController decides replica plans (how many replicas of each
// task run where, with which input shares) from the per-worker metrics of
// env.Info (CLASP's Table 2), which the Dict observation does not carry.
// The same rules as Controller apply: deterministic given Reset's seed, no
// retained Info.
type HorizontalController interface {
	// Reset prepares the controller for a new episode.
	Reset(seed uint64) error
	// Act returns the action (a replica plan, or Hold) for the step that
	// starts at time now (seconds since Reset), given the Info of the
	// previous step (of Reset at now = 0, where Info.NextOfferedRate is
	// the ingress rate the first step will see).
	Act(now float64, info env.Info) (env.Action, error)
}

// CapacityReporter is implemented by horizontal controllers that can tell
// when the demand they planned for exceeds the whole cluster.
type CapacityReporter interface {
	// OverCapacity reports whether the last Act found the demand beyond
	// the cluster.
	OverCapacity() bool
}
