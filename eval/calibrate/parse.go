package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"streamscale/env"
	"streamscale/serve/runtime/ops"
)

// Parse decodes a calibration.json strictly (unknown fields
// and trailing data refused) and checks what Derive relies on:
// the operators are the profile application's, in order, every measured
// number finite and in range, one service-time entry per operator.
func Parse(data []byte) (Calibration, error) {
	var c Calibration
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Calibration{}, fmt.Errorf("calibration.json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Calibration{}, errors.New("calibration.json: data after the JSON value")
	}
	if !slices.Contains(env.Profiles(), c.Profile) {
		return Calibration{}, fmt.Errorf("calibration.json: profile %q, want %s", c.Profile, strings.Join(env.Profiles(), " or "))
	}
	app, err := ops.AppByName(c.Profile)
	if err != nil {
		return Calibration{}, err
	}
	fin := func(x, lo, hi float64) bool { return x >= lo && x <= hi }
	switch {
	case !fin(c.Rate, 1e-9, 1e6) || !fin(c.TimeScaleS, 1e-3, 3600) || !fin(c.CPUScale, 1e-9, 1000):
		return Calibration{}, fmt.Errorf("calibration.json: rate %v, time_scale_s %v, cpu_scale %v out of range", c.Rate, c.TimeScaleS, c.CPUScale)
	case !fin(c.HighMC, 500, 10000) || !fin(c.LowMC, 500, 10000) || !fin(c.P95HighMS, 0, 1e7) || !fin(c.P95LowMS, 0, 1e7):
		return Calibration{}, fmt.Errorf("calibration.json: high_millicores %v, low_millicores %v (want 500..10000), p95_high_ms %v or p95_low_ms %v out of range", c.HighMC, c.LowMC, c.P95HighMS, c.P95LowMS)
	case c.Intervals < 8 || c.Intervals > 1e6:
		return Calibration{}, fmt.Errorf("calibration.json: intervals %d, want 8..1e6", c.Intervals)
	case c.ActuationIntervals < -1 || c.ActuationIntervals >= c.Intervals:
		return Calibration{}, fmt.Errorf("calibration.json: actuation_intervals %d, want -1..%d", c.ActuationIntervals, c.Intervals-1)
	case !fin(c.ServiceCV, 0, 1e3) || !fin(c.CapacityJitter, 0, 1e3) || !fin(c.CFSPeriodMS, 0, 1000) || !fin(c.Enforcement, 0, 1e3):
		return Calibration{}, fmt.Errorf("calibration.json: service_cv %v, capacity_jitter %v, cfs_period_ms %v or enforcement %v out of range", c.ServiceCV, c.CapacityJitter, c.CFSPeriodMS, c.Enforcement)
	case len(c.Operators) != len(app.Operators) || len(c.ServiceTimes) != len(app.Operators):
		return Calibration{}, fmt.Errorf("calibration.json: %d operators and %d service times, want %d (the operators of %s)", len(c.Operators), len(c.ServiceTimes), len(app.Operators), c.Profile)
	case c.EnforcementOp < 0 || c.EnforcementOp >= len(app.Operators):
		return Calibration{}, fmt.Errorf("calibration.json: enforcement_op %d, want 0..%d", c.EnforcementOp, len(app.Operators)-1)
	}
	for i, oc := range c.Operators {
		if oc.Operator != app.Operators[i].Name || c.ServiceTimes[i].Operator != oc.Operator {
			return Calibration{}, fmt.Errorf("calibration.json: operators[%d] %q (service times %q), want %q", i, oc.Operator, c.ServiceTimes[i].Operator, app.Operators[i].Name)
		}
		if !fin(oc.CPUUSPerEvent, 0, 1e6) || !fin(oc.CV, 0, 1e3) || !fin(oc.DelayMS, 0, 1e7) || !fin(oc.ExecsPerInterval, 0, 1e12) || oc.Intervals < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: operator %s: a value out of range (%+v)", oc.Operator, oc)
		}
		if e := oc.EmptyShare; e != nil && !fin(*e, 0, 1) {
			return Calibration{}, fmt.Errorf("calibration.json: operator %s: empty_share %v, want a share in [0, 1]", oc.Operator, *e)
		}
		if s := c.ServiceTimes[i]; !fin(s.MeanUS, 0, 1e9) || !fin(s.CV, 0, 1e3) || s.N < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: service time of %s: a value out of range (%+v)", oc.Operator, s)
		}
	}
	if len(c.LowPhase) != 0 && len(c.LowPhase) != len(app.Operators) {
		return Calibration{}, fmt.Errorf("calibration.json: %d low_phase rows, want 0 or %d (the operators of %s)", len(c.LowPhase), len(app.Operators), c.Profile)
	}
	for i, lc := range c.LowPhase {
		if lc.Operator != app.Operators[i].Name || !fin(lc.CPUUSPerEvent, 0, 1e6) || !fin(lc.QuotaUsed, 0, 1e3) || lc.Intervals < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: low_phase[%d]: want operator %q and values in range, got %+v", i, app.Operators[i].Name, lc)
		}
	}
	for i, pt := range c.HopCurve {
		if !fin(pt.Rate, 1e-9, 1e6) || pt.Rate == c.Rate || (i > 0 && !(pt.Rate > c.HopCurve[i-1].Rate)) || !fin(pt.P95MS, 0, 1e7) || pt.Intervals < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d]: rate %v (want (0, 1e6], increasing, not the main rate %v), p95_ms %v, intervals %d", i, pt.Rate, c.Rate, pt.P95MS, pt.Intervals)
		}
		if len(pt.Operators) != len(app.Operators) {
			return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d]: %d operators, want %d (the operators of %s)", i, len(pt.Operators), len(app.Operators), c.Profile)
		}
		for j, oc := range pt.Operators {
			if oc.Operator != app.Operators[j].Name || !fin(oc.DelayMS, 0, 1e7) || !fin(oc.ExecsPerInterval, 0, 1e12) || !fin(oc.CPUUSPerEvent, 0, 1e6) || !fin(oc.CV, 0, 1e3) || oc.Intervals < 0 {
				return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d] operators[%d]: want operator %q and values in range, got %+v", i, j, app.Operators[j].Name, oc)
			}
			if e := oc.EmptyShare; e != nil && !fin(*e, 0, 1) {
				return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d] operators[%d] (%s): empty_share %v, want a share in [0, 1]", i, j, oc.Operator, *e)
			}
		}
	}
	if cp := c.CostProbe; cp != nil && cp.Model != nil {
		if err := cp.Model.Check(); err != nil {
			return Calibration{}, fmt.Errorf("calibration.json: cost_probe.model: %w", err)
		}
	}
	if ce := c.CostModel; ce != nil && len(ce.Samples) != len(ce.Mixes) {
		return Calibration{}, fmt.Errorf("calibration.json: cost model with %d sample counts for %d mixes", len(ce.Samples), len(ce.Mixes))
	}
	return c, nil
}
