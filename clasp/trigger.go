package clasp

import "fmt"

// TriggerConfig says when to re-plan (paper §4.5).
type TriggerConfig struct {
	// RateChange is the relative change of the input rate λ_p against the
	// rate at the last plan, λ_ref, that counts as a change, in (0, 1):
	// λ_p > (1+RateChange)·λ_ref or λ_p < (1−RateChange)·λ_ref. Default 0.1.
	RateChange float64
	// RateHoldS is how long, seconds > 0, the rate must stay changed in the
	// same direction. Default 2.
	RateHoldS float64
	// LagTolerance is the relative shortfall of throughput that counts as
	// lagging, in [0, 1): Λ < (1−LagTolerance)·λ_p. Default 0.05.
	LagTolerance float64
	// LagHoldS is how long, seconds > 0, throughput must lag. Default 3.
	LagHoldS float64
}

// DefaultTriggerConfig returns the defaults documented on the fields.
func DefaultTriggerConfig() TriggerConfig {
	return TriggerConfig{RateChange: 0.1, RateHoldS: 2, LagTolerance: 0.05, LagHoldS: 3}
}

func (c TriggerConfig) validate() error {
	if !(c.RateChange > 0 && c.RateChange < 1) || !positive(c.RateHoldS) || !(c.LagTolerance >= 0 && c.LagTolerance < 1) || !positive(c.LagHoldS) {
		return invalidf("trigger %+v out of range", c)
	}
	return nil
}

// Trigger decides when the planner re-plans: when the input rate has changed
// by more than RateChange (relative to the rate at the last plan), in the same
// direction, for RateHoldS seconds, or when throughput has been below input
// for LagHoldS seconds.
//
// Time: each observation stands for the interval since the previous one. A
// condition has held for the time since the previous observation at which it
// did not hold (or, if it held since the first observation, since that
// first observation). With one observation per second, a 2 s hold fires on
// the second consecutive observation with the condition, counted from an
// observation without it. Time is passed in; the trigger reads no clock.
type Trigger struct {
	cfg                 TriggerConfig
	ref                 float64 // λ_ref; < 0 before the first Rebase
	last                float64 // time of the previous observation
	started             bool
	rateDir             int
	rateSince, lagSince float64
	lagging             bool
	cooldownUntil       float64
}

// NewTrigger returns a Trigger or an error for a bad configuration.
func NewTrigger(cfg TriggerConfig) (*Trigger, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &Trigger{cfg: cfg}
	t.Reset()
	return t, nil
}

// Reset forgets the reference rate and every hold.
func (t *Trigger) Reset() {
	*t = Trigger{cfg: t.cfg, ref: -1}
}

// Rebase records a new plan: λ_ref becomes rate, the holds restart, and
// observations before until (the end of the plan's migration) are ignored.
func (t *Trigger) Rebase(now, rate, until float64) {
	t.ref = rate
	t.rateDir, t.lagging = 0, false
	t.rateSince, t.lagSince = now, now
	t.cooldownUntil = until
}

// Observe records one observation and reports whether to re-plan and why.
// Observations at or before the previous one's time are ignored.
func (t *Trigger) Observe(now, inputRate, throughput float64) (bool, string) {
	if t.started && now <= t.last {
		return false, ""
	}
	prev := now
	if t.started {
		prev = t.last
	}
	t.started, t.last = true, now
	if now < t.cooldownUntil || t.ref < 0 {
		t.rateDir, t.lagging = 0, false
		return false, ""
	}
	dir := 0
	switch {
	case inputRate > (1+t.cfg.RateChange)*t.ref:
		dir = 1
	case inputRate < (1-t.cfg.RateChange)*t.ref:
		dir = -1
	}
	if dir != t.rateDir {
		t.rateSince = prev
	}
	t.rateDir = dir
	lag := throughput < (1-t.cfg.LagTolerance)*inputRate
	if lag && !t.lagging {
		t.lagSince = prev
	}
	t.lagging = lag
	const eps = 1e-9
	if dir != 0 && now-t.rateSince >= t.cfg.RateHoldS-eps {
		where := "above"
		if dir < 0 {
			where = "below"
		}
		return true, fmt.Sprintf("input rate %.1f/s %s λ_ref %.1f/s by > %.0f%% for %.1f s", inputRate, where, t.ref, 100*t.cfg.RateChange, now-t.rateSince)
	}
	if lag && now-t.lagSince >= t.cfg.LagHoldS-eps {
		return true, fmt.Sprintf("throughput %.1f/s below input %.1f/s for %.1f s", throughput, inputRate, now-t.lagSince)
	}
	return false, ""
}
