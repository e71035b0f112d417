package planner

import (
	"fmt"
	"slices"
)

// Window is what the load did over one control window: since the previous
// TakeWindow (or the load's start).
type Window struct {
	// Offered counts the inputs whose intended send time fell in the
	// window.
	Offered int
	// LatencyMS holds the end-to-end latency of every input completed in
	// the window, ms, ascending: completion minus the intended send time,
	// so an input the generator sent late still counts from when it was
	// due (corrected for coordinated omission).
	LatencyMS []float64
	// OpenAgeMS holds, for every input due by the window's end and not
	// complete, its age then, ms (ascending): a lower bound of its
	// latency, so a window in which a backlog completes nothing still
	// shows it.
	OpenAgeMS []float64
	// CatchUp marks a window taken in a catch-up round: one the Allocator
	// gets after the run's drain for a Control boundary of the load that
	// had no round (see control). Such rounds run back to back, so the
	// first takes what the load's last rounds left and the others nothing
	// (no input offered, no latency, nothing open): an empty catch-up
	// window describes no interval of the load, and a consumer must not
	// count it as one that met its latency objective.
	CatchUp bool `json:",omitempty"`
}

// TakeWindow returns the window since the previous call and starts a new
// one. Windows are kept only when Config.Allocate is set (the vertical
// loop reads them from its Allocator); otherwise the window is empty.
func (p *Planner) TakeWindow() Window {
	p.mu.Lock()
	w := Window{Offered: p.winOffer, LatencyMS: p.winLat, CatchUp: p.catchUp}
	p.winOffer, p.winLat = 0, nil
	if p.cfg.Allocate != nil && p.started {
		now := p.sinceStart().Nanoseconds()
		for p.winOpen < len(p.ins) && p.ins[p.winOpen].done {
			p.winOpen++
		}
		for i := p.winOpen; i < len(p.ins); i++ {
			if in := &p.ins[i]; !in.done && in.intended <= now {
				w.OpenAgeMS = append(w.OpenAgeMS, float64(now-in.intended)/1e6)
			}
		}
	}
	p.mu.Unlock()
	slices.Sort(w.LatencyMS)
	slices.Sort(w.OpenAgeMS)
	return w
}

// Run statuses (Result.Status).
const (
	StatusSucceeded  = "succeeded"
	StatusUnfinished = "unfinished"
	StatusFailed     = "failed"
)

// Result is a run's outcome.
type Result struct {
	App string `json:"app"`
	// Status is StatusSucceeded (every input completed), StatusUnfinished
	// (inputs still queued when the drain ended, none dropped) or
	// StatusFailed (the job failed, or inputs were dropped); Reason says
	// why for the last two.
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	Inputs    uint64 `json:"inputs"`
	Completed uint64 `json:"completed"`
	// Dropped counts the inputs open at the end whose current attempt can
	// never complete: sent to no live owner, or before a worker died,
	// and not replayed since (a defect, or a failed job). Unfinished
	// counts the other open inputs: backlog still queued when the drain
	// ended. Lost is Dropped. Inputs = Completed + Dropped + Unfinished:
	// an input a restore rolled back whose replay is still open counts as
	// dropped or unfinished, not completed.
	Dropped    uint64 `json:"dropped"`
	Unfinished uint64 `json:"unfinished"`
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
	// Guarantee is what the keyed state promises: "exactly-once" with
	// checkpoints (a failure rolls every worker back to the last
	// checkpoint and replays after its cut), "at-least-once" without (a
	// failover replays the open inputs, which a live worker may apply
	// twice). StateLostGroups counts the key groups (of every operator)
	// whose state failures lost: a dead worker's, without checkpoints.
	Guarantee       string `json:"guarantee"`
	StateLostGroups int    `json:"state_lost_groups"`
	// Restarts counts the job restarts (every worker dead).
	Restarts int     `json:"restarts"`
	P50MS    float64 `json:"p50_ms"`
	P95MS    float64 `json:"p95_ms"`
	P99MS    float64 `json:"p99_ms"`
	// P50InCheckpointMS, P95InCheckpointMS and P99InCheckpointMS are over
	// the inputs due while a checkpoint was being taken (its start to its
	// end, CheckpointStat.DurationMS), the *OutsideCheckpointMS over the
	// others (0 without such inputs): a comparison within one run.
	P50InCheckpointMS      float64 `json:"p50_in_checkpoint_ms"`
	P50OutsideCheckpointMS float64 `json:"p50_outside_checkpoint_ms"`
	P95InCheckpointMS      float64 `json:"p95_in_checkpoint_ms"`
	P99InCheckpointMS      float64 `json:"p99_in_checkpoint_ms"`
	P95OutsideCheckpointMS float64 `json:"p95_outside_checkpoint_ms"`
	P99OutsideCheckpointMS float64 `json:"p99_outside_checkpoint_ms"`
	// WorkersStarted is the initial worker count (Config.Workers);
	// WorkersEnded the live workers when the run ended, after every scale
	// step and failure.
	WorkersStarted int `json:"workers_started"`
	WorkersEnded   int `json:"workers_ended"`
	Failures       int `json:"failures"`
	// BeatGapMSP99 and BeatGapMSMax are the 99th percentile and the
	// largest time between two consecutive heartbeats of one worker, as
	// the planner read them (0 without two beats): how close a worker
	// came to being declared dead (Config.Miss × Config.Heartbeat).
	BeatGapMSP99 float64     `json:"beat_gap_ms_p99"`
	BeatGapMSMax float64     `json:"beat_gap_ms_max"`
	Refused      uint64      `json:"refused_frames"`
	Migrations   []Migration `json:"migrations"`
	// MigrationPlannerMS is the longest planner duration;
	// MigrationWorkerPauseMSMax the longest worker pause, over all
	// migrations (0 without migrations).
	MigrationPlannerMS        float64 `json:"migration_planner_ms"`
	MigrationWorkerPauseMSMax float64 `json:"migration_worker_pause_ms_max"`
	// ElapsedS is the time from the load's start to the last completion;
	// ThroughputPerS is Completed / ElapsedS.
	ElapsedS       float64 `json:"elapsed_s"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	// Checkpoints counts the complete checkpoints and CheckpointsDiscarded
	// the others; CheckpointMSMax and CheckpointMSMean are their ingress
	// pauses, CheckpointDrainMSMax the longest wait for the inputs in
	// flight within one, CheckpointBytesMax and CheckpointKeysMax the
	// largest. RestoredGroups counts the dead workers' key groups restored
	// by failovers and Replayed the inputs sent again by them (with or
	// without checkpoints).
	// CheckpointMode is Config.CheckpointMode ("" without checkpoints);
	// CheckpointDurationMSMean is the mean start → completion of the
	// complete checkpoints, CheckpointAlignMSMax the longest alignment of
	// one task and CheckpointSnapshotMSMax the longest state copy of one
	// worker in one checkpoint (see CheckpointStat).
	CheckpointMode           string           `json:"checkpoint_mode,omitempty"`
	CheckpointDurationMSMean float64          `json:"checkpoint_duration_ms_mean"`
	CheckpointAlignMSMax     float64          `json:"checkpoint_align_ms_max"`
	CheckpointSnapshotMSMax  float64          `json:"checkpoint_snapshot_ms_max"`
	Checkpoints              int              `json:"checkpoints"`
	CheckpointsDiscarded     int              `json:"checkpoints_discarded"`
	CheckpointMSMax          float64          `json:"checkpoint_ms_max"`
	CheckpointMSMean         float64          `json:"checkpoint_ms_mean"`
	CheckpointDrainMSMax     float64          `json:"checkpoint_drain_ms_max"`
	CheckpointBytesMax       uint64           `json:"checkpoint_bytes_max"`
	CheckpointKeysMax        uint64           `json:"checkpoint_keys_max"`
	RestoredGroups           int              `json:"restored_groups"`
	Replayed                 int              `json:"replayed"`
	CheckpointLog            []CheckpointStat `json:"checkpoint_log"`
	// CheckpointsSaved counts the checkpoints written to Config.Store,
	// CheckpointSaveErrors the writes that failed, and CheckpointFile is
	// the last file written.
	CheckpointsSaved     int    `json:"checkpoints_saved,omitempty"`
	CheckpointSaveErrors int    `json:"checkpoint_save_errors,omitempty"`
	CheckpointFile       string `json:"checkpoint_file,omitempty"`
	// Resumed is the checkpoint a restarted planner resumed the job from
	// (nil: none). Its inputs (those before Cut) count as complete in
	// Inputs and Completed, but this run sent none of them: the latency
	// figures cover only the inputs from Cut on; ElapsedS is in the
	// load's time, which resumed at AtS; the rows count from this run's
	// start.
	Resumed  *Resumed  `json:"resumed,omitempty"`
	Restores []Restore `json:"restores"`
	Rows     []Row     `json:"-"`
}

// Resumed is the checkpoint a restarted planner resumed from: the file,
// the checkpoint's ID, its cut (the source offset) and the load time the
// source resumed at (input Cut's intended time), s.
type Resumed struct {
	File       string  `json:"file"`
	Checkpoint uint64  `json:"checkpoint"`
	Cut        int     `json:"cut"`
	AtS        float64 `json:"at_s"`
}

func (p *Planner) result() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Result{App: p.cfg.App.Name, Inputs: uint64(len(p.ins)), Completed: p.completed, Duplicated: p.dup, WorkersStarted: p.cfg.Workers, WorkersEnded: len(p.core.Live()), Failures: p.core.Failures(), Refused: p.refused, Migrations: p.core.Migrations(), Rows: slices.Clone(p.rows)}
	r.Guarantee, r.StateLostGroups, r.Restarts = "at-least-once", p.core.LostGroups(), p.core.Restarts()
	if p.cfg.CheckpointInterval > 0 {
		r.Guarantee = "exactly-once"
	}
	r.Completed = 0
	for i := range p.ins {
		switch in := &p.ins[i]; {
		case in.done && !in.redo:
			r.Completed++
		case i < p.sent && (in.stranded || in.gen < p.deaths):
			r.Dropped++
		default:
			r.Unfinished++
		}
	}
	r.Lost = r.Dropped
	switch {
	case p.failErr != nil:
		r.Status, r.Reason = StatusFailed, p.failErr.Error()
	case r.Dropped > 0:
		r.Status, r.Reason = StatusFailed, fmt.Sprintf("%d inputs dropped", r.Dropped)
	case r.Unfinished > 0:
		r.Status, r.Reason = StatusUnfinished, fmt.Sprintf("%d inputs still queued when the drain ended", r.Unfinished)
	default:
		r.Status = StatusSucceeded
	}
	r.ElapsedS = p.lastDone.Seconds()
	if r.ElapsedS > 0 {
		r.ThroughputPerS = float64(r.Completed) / r.ElapsedS
	}
	if p.cfg.CheckpointInterval > 0 {
		r.CheckpointMode = p.cfg.CheckpointMode
	}
	r.CheckpointsSaved, r.CheckpointSaveErrors, r.CheckpointFile = p.store.saved, p.store.fails, p.store.last
	if c := p.cfg.Restore; c != nil {
		r.Resumed = &Resumed{File: p.cfg.RestoreFrom, Checkpoint: c.ID, Cut: int(c.Cut), AtS: p.resumeAt.Seconds()}
	}
	lat := slices.Clone(p.allLat)
	slices.Sort(lat)
	r.P50MS, r.P95MS, r.P99MS = quantile(lat, 0.5), quantile(lat, 0.95), quantile(lat, 0.99)
	gaps := p.core.BeatGaps()
	slices.Sort(gaps)
	r.BeatGapMSP99 = quantile(gaps, 0.99)
	if len(gaps) > 0 {
		r.BeatGapMSMax = gaps[len(gaps)-1]
	}
	for _, m := range r.Migrations {
		r.MigrationPlannerMS = max(r.MigrationPlannerMS, m.PlannerMS)
		r.MigrationWorkerPauseMSMax = max(r.MigrationWorkerPauseMSMax, m.PauseMSMax)
	}
	r.CheckpointLog, r.Restores, r.Replayed = append([]CheckpointStat{}, p.core.CheckpointLog()...), append([]Restore{}, p.core.Restores()...), p.replayed
	for _, c := range r.CheckpointLog {
		if !c.Complete {
			r.CheckpointsDiscarded++
			continue
		}
		r.Checkpoints++
		r.CheckpointMSMax = max(r.CheckpointMSMax, c.PauseMS)
		r.CheckpointMSMean += c.PauseMS
		r.CheckpointDurationMSMean += c.DurationMS
		r.CheckpointAlignMSMax = max(r.CheckpointAlignMSMax, c.AlignMS)
		r.CheckpointSnapshotMSMax = max(r.CheckpointSnapshotMSMax, c.SnapshotMS)
		r.CheckpointDrainMSMax = max(r.CheckpointDrainMSMax, c.DrainMS)
		r.CheckpointBytesMax = max(r.CheckpointBytesMax, c.Bytes)
		r.CheckpointKeysMax = max(r.CheckpointKeysMax, c.Keys)
	}
	if r.Checkpoints > 0 {
		r.CheckpointMSMean /= float64(r.Checkpoints)
		r.CheckpointDurationMSMean /= float64(r.Checkpoints)
	}
	for _, rs := range r.Restores {
		r.RestoredGroups += rs.Groups
	}
	if len(r.CheckpointLog) > 0 {
		var in, out []float64
		c := 0 // checkpoints are in start order
		for i := range p.ins {
			x := &p.ins[i]
			if !x.done || i < p.skipped {
				continue // not complete, or in a restored checkpoint (no latency)
			}
			for c < len(r.CheckpointLog) && int64((r.CheckpointLog[c].AtS+r.CheckpointLog[c].DurationMS/1e3)*1e9) < x.intended {
				c++
			}
			if c < len(r.CheckpointLog) && int64(r.CheckpointLog[c].AtS*1e9) <= x.intended {
				in = append(in, float64(x.ms))
			} else {
				out = append(out, float64(x.ms))
			}
		}
		slices.Sort(in)
		slices.Sort(out)
		r.P50InCheckpointMS, r.P50OutsideCheckpointMS = quantile(in, 0.5), quantile(out, 0.5)
		r.P95InCheckpointMS, r.P99InCheckpointMS = quantile(in, 0.95), quantile(in, 0.99)
		r.P95OutsideCheckpointMS, r.P99OutsideCheckpointMS = quantile(out, 0.95), quantile(out, 0.99)
	}
	return r
}
