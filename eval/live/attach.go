package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
	"streamscale/traces"
)

// attachment is a replay asked of a running planner service.
type attachment struct {
	addr, token string
	app         ops.App
	req         planner.StartRequest
	log         io.Writer
	// controller, if set, must be the service's placement controller.
	controller string
}

// startRequest is the replay request of a live run: the trace's first
// intervals as explicit rates (so the service replays exactly the slice
// this process loaded), the seed, the time scale and the workers.
func startRequest(app ops.App, mode string, tr *traces.Trace, intervals int, step time.Duration, seed uint64, workers int, alloc []int) planner.StartRequest {
	rates := make([]float64, intervals)
	for i := range rates {
		rates[i] = tr.Rate(i)
	}
	return planner.StartRequest{App: app.Name, Mode: mode, Rates: rates, RateMult: 1, Seed: seed, Intervals: intervals,
		TimeScaleMS: int(step / time.Millisecond), Workers: workers, Alloc: alloc}
}

func (c *Config) attachment(mode string, alloc []int) attachment {
	return attachment{addr: c.Planner, token: c.PlannerToken, app: c.App, log: c.Log,
		req: startRequest(c.App, mode, c.Trace, c.Intervals, c.Step, c.Seed, c.Workers, alloc)}
}

// checkAttachable refuses a step the control API cannot carry.
func checkAttachable(step time.Duration) error {
	if step%time.Millisecond != 0 {
		return fmt.Errorf("live: step %v is not a whole number of milliseconds (the planner's control API counts ms)", step)
	}
	return nil
}

// attach runs a replay on the planner service at a.addr: it checks that
// the service runs a.app (a mismatched profile is refused before anything
// starts), starts the replay, hands every interval report to onInterval
// in order and sends the allocation it returns (nil: none), and returns
// the replay's result. When ctx ends it stops the replay.
func attach(ctx context.Context, a attachment, onInterval func(planner.IntervalReport) map[uint32][]int) (planner.Result, error) {
	if err := checkAttachable(time.Duration(a.req.TimeScaleMS) * time.Millisecond); err != nil {
		return planner.Result{}, err
	}
	cl, err := planner.NewControlClient(a.addr, a.token)
	if err != nil {
		return planner.Result{}, fmt.Errorf("live: %w", err)
	}
	in, err := cl.Info(ctx)
	if err != nil {
		return planner.Result{}, fmt.Errorf("live: attach to %s: %w", a.addr, err)
	}
	var ops []string
	for _, o := range a.app.Operators {
		ops = append(ops, o.Name)
	}
	if in.App != a.app.Name || !slices.Equal(in.Operators, ops) {
		return planner.Result{}, fmt.Errorf("live: the planner at %s runs app %s (operators %v); this run's profile is %s (operators %v)",
			a.addr, in.App, in.Operators, a.app.Name, ops)
	}
	if a.controller != "" && in.Controller != a.controller {
		return planner.Result{}, fmt.Errorf("live: the planner at %s runs controller %s; this run asks for %s", a.addr, in.Controller, a.controller)
	}
	id, err := cl.Start(ctx, a.req)
	if err != nil {
		return planner.Result{}, fmt.Errorf("live: %w", err)
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.Stop(sctx); err != nil {
			fmt.Fprintf(a.log, "live: stop the replay at %s: %v\n", a.addr, err)
		}
	}
	wait := 2*time.Duration(a.req.TimeScaleMS)*time.Millisecond + time.Second
	for from := 0; ; {
		ivs, err := cl.Intervals(ctx, from, wait)
		if ctx.Err() != nil {
			stop()
			return planner.Result{}, ctx.Err()
		}
		if err != nil {
			stop()
			return planner.Result{}, fmt.Errorf("live: %w", err)
		}
		if ivs.ID != id {
			return planner.Result{}, fmt.Errorf("live: the planner at %s now runs replay %d, not ours (%d): another client started one", a.addr, ivs.ID, id)
		}
		for _, iv := range ivs.Intervals {
			out := onInterval(iv)
			if len(out) == 0 {
				continue
			}
			var req planner.AllocRequest
			for w, mcs := range out {
				req.Workers = append(req.Workers, planner.WorkerAlloc{Worker: w, Millicores: mcs})
			}
			slices.SortFunc(req.Workers, func(x, y planner.WorkerAlloc) int { return int(x.Worker) - int(y.Worker) })
			if err := cl.SetAlloc(ctx, req); err != nil {
				fmt.Fprintf(a.log, "live: interval %d: %v\n", iv.Index, err)
			}
		}
		from += len(ivs.Intervals)
		if ivs.State != "running" && len(ivs.Intervals) == 0 {
			break
		}
	}
	st, err := cl.Status(ctx)
	if err != nil {
		return planner.Result{}, fmt.Errorf("live: %w", err)
	}
	switch {
	case st.ID != id:
		return planner.Result{}, fmt.Errorf("live: the planner at %s now runs replay %d, not ours (%d)", a.addr, st.ID, id)
	case st.State == "failed":
		return planner.Result{}, fmt.Errorf("live: the replay at %s failed: %s", a.addr, st.Error)
	case st.State == "stopped":
		return planner.Result{}, fmt.Errorf("live: the replay at %s was stopped before its end", a.addr)
	case st.Result == nil:
		return planner.Result{}, errors.New("live: the replay ended without a result")
	}
	return *st.Result, nil
}
