package core

import "time"

// Step is a scale step given in advance: at At after the load starts, run
// Workers workers with even shares.
type Step struct {
	At      time.Duration
	Workers int
}

// Migration is one reconfiguration's measurements.
type Migration struct {
	Epoch       uint64  `json:"epoch"`
	AtS         float64 `json:"at_s"`
	From        int     `json:"from_workers"`
	To          int     `json:"to_workers"`
	Reason      string  `json:"reason"`
	Moves       int     `json:"moves"`
	PlannerMS   float64 `json:"planner_ms"`
	PauseMSMax  float64 `json:"worker_pause_ms_max"`
	WaitMSMax   float64 `json:"worker_wait_ms_max"`
	MovedKeys   uint64  `json:"moved_keys"`
	MovedBytes  uint64  `json:"moved_bytes"`
	MovedQueued uint64  `json:"moved_queued"`
	Complete    bool    `json:"complete"`
	// Pauses are every reporting worker's pause, ms, by worker ID.
	Pauses []WorkerPause `json:"worker_pauses"`
}

// WorkerPause is one worker's part of a migration.
type WorkerPause struct {
	Worker  uint32  `json:"worker"`
	PauseMS float64 `json:"pause_ms"`
	WaitMS  float64 `json:"wait_ms"`
}

// CheckpointStat is one checkpoint's measurements.
type CheckpointStat struct {
	ID  uint64  `json:"id"`
	AtS float64 `json:"at_s"`
	// Cut is the number of inputs the checkpoint covers (inputs 0..Cut−1).
	Cut int `json:"cut"`
	// Mode is "pause" or "barrier" (Config.CheckpointMode).
	Mode string `json:"mode"`
	// PauseMS is the ingress pause: from stopping the ingress to resuming
	// it (DrainMS waiting for the inputs in flight to complete, then the
	// snapshot round trip). Both are 0 with barriers, which pause nothing.
	PauseMS float64 `json:"pause_ms"`
	DrainMS float64 `json:"drain_ms"`
	// DurationMS is the checkpoint's start (the ingress stopped, or the
	// barriers injected) to its completion or discard.
	DurationMS float64 `json:"duration_ms"`
	// AlignMS is the longest alignment of one task with barriers (the
	// worker's first barrier of the checkpoint to the task's snapshot);
	// SnapshotMS the longest time one worker spent copying its state
	// (all of it while the ingress is paused; summed over its tasks with
	// barriers).
	AlignMS    float64 `json:"align_ms"`
	SnapshotMS float64 `json:"snapshot_ms"`
	Keys       uint64  `json:"keys"`
	Bytes      uint64  `json:"bytes"`
	// Complete is false for a discarded checkpoint; Reason says why.
	Complete bool   `json:"complete"`
	Reason   string `json:"reason,omitempty"`
}

// Restore is one failover that restored a checkpoint.
type Restore struct {
	AtS        float64 `json:"at_s"`
	Epoch      uint64  `json:"epoch"`
	Checkpoint uint64  `json:"checkpoint"` // 0: the empty initial state
	Cut        int     `json:"cut"`
	Groups     int     `json:"restored_groups"` // key groups the dead workers owned
	Replayed   int     `json:"replayed"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
