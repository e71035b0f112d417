package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"streamscale/internal/command"
	"streamscale/serve/runtime"
	"streamscale/serve/runtime/kcfs"
	"streamscale/serve/runtime/worker"
)

// runTaskHost is the hidden "serve taskhost" subcommand: a task host
// (package kcfs) speaking the task-host protocol on stdin/stdout.
func runTaskHost(_ context.Context, args []string, _ command.IO) error {
	if len(args) != 0 {
		return command.Usagef("serve taskhost: takes no arguments (it is started by serve worker -cpu-enforce kernel and serve cfscheck)")
	}
	return kcfs.ServeStdio(runtime.Apps)
}

// kernelCgroups detects a writable CPU cgroup and removes stale ones left
// by dead processes.
func kernelCgroups(name string, log io.Writer) (*kcfs.Controller, error) {
	c, err := kcfs.Detect()
	if err != nil {
		return nil, err
	}
	removed, err := c.RemoveStale()
	for _, d := range removed {
		fmt.Fprintf(log, "%s: removed stale cgroup %s\n", name, d)
	}
	if err != nil {
		fmt.Fprintf(log, "%s: %v\n", name, err)
	}
	return c, nil
}

// workerHosts sets cfg.Hosts for -cpu-enforce kernel: each task runs in a
// "serve taskhost" child under a cgroup quota. The returned close stops
// every host made (call it also when worker.New fails).
func workerHosts(cfg *worker.Config, appName string, log io.Writer) (closeAll func(), err error) {
	c, err := kernelCgroups("serve worker", log)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var hosts []*kcfs.Host
	cfg.Hosts = func(op, mc int) (worker.TaskHost, error) {
		h, err := kcfs.StartHost(context.Background(), kcfs.HostConfig{App: appName, Op: op, Mode: kcfs.Kernel,
			Millicores: mc, Period: cfg.Period, Cgroups: c, Stderr: log})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		hosts = append(hosts, h)
		mu.Unlock()
		return h, nil
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range hosts {
			if err := h.Close(); err != nil {
				fmt.Fprintf(log, "serve worker: %v\n", err)
			}
		}
		hosts = nil
	}, nil
}

// runCFSCheck is "serve cfscheck": the in-process CPU enforcement against
// the kernel's on one operator's real work (kcfs.Check).
func runCFSCheck(ctx context.Context, args []string, o command.IO) error {
	fs := command.NewFlagSet("serve cfscheck")
	var cfg kcfs.CheckConfig
	appName := fs.String("app", "syn", "application ("+strings.Join(runtime.AppNames(), ", ")+")")
	opName := fs.String("op", "noop0", "operator name of -app, or APP/OPERATOR (e.g. pred/SenMLParse)")
	mcs := fs.String("millicores", "250,500,1500", "allocations to check, comma-separated millicores (each 10..1000000)")
	loads := fs.String("loads", "0,0.7", "offered loads, comma-separated: 0 is saturation (closed loop), f in (0,1] offers f × the saturation event rate open-loop")
	modes := fs.String("modes", "inprocess,kernel", "enforcements to run: inprocess, kernel")
	dur := fs.Duration("duration", 10*time.Second, "measured time per point")
	warm := fs.Duration("warmup", 500*time.Millisecond, "unmeasured time before each point")
	period := fs.Duration("period", kcfs.DefaultPeriod, "CFS period (1ms..1s)")
	batch := fs.Int("batch", 64, "records per batch frame at most")
	seed := fs.Uint64("seed", 1, "seed of the operator's inputs (the app's source)")
	fs.IntVar(&cfg.Procs, "host-procs", 1, "GOMAXPROCS of the task-host processes")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := command.Parse(fs, "usage: serve cfscheck [-app syn] [-op noop0] [-millicores 250,500,1500] [-duration 10s] [-json]\nruns one operator's work in a task-host process under the in-process CPU quota and under the kernel's CFS quota (a CPU cgroup; needs root) and prints CPU used / quota, throttled periods and event latency per mode", args, o); err != nil {
		return err
	}
	o = o.Fill()
	cfg.Apps, cfg.App, cfg.Op, cfg.Duration, cfg.Warmup, cfg.Period, cfg.Batch, cfg.Seed = runtime.Apps, *appName, *opName, *dur, *warm, *period, *batch, *seed
	if a, op, ok := strings.Cut(*opName, "/"); ok {
		cfg.App, cfg.Op = a, op
	}
	var err error
	if cfg.Millicores, err = parseInts(*mcs); err != nil {
		return command.Usagef("serve cfscheck: -millicores: %v", err)
	}
	for _, f := range strings.Split(*loads, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return command.Usagef("serve cfscheck: -loads: %q, want 0 (saturation) or a fraction in (0, 1]", f)
		}
		cfg.Loads = append(cfg.Loads, v)
	}
	for _, f := range strings.Split(*modes, ",") {
		m, err := kcfs.ParseMode(strings.TrimSpace(f))
		if err != nil {
			return command.Usagef("serve cfscheck: -modes: %v", err)
		}
		cfg.Modes = append(cfg.Modes, m)
	}
	switch {
	case *dur <= 0 || *warm < 0:
		return command.Usagef("serve cfscheck: -duration %v must be > 0, -warmup %v ≥ 0", *dur, *warm)
	case *period < time.Millisecond || *period > time.Second:
		return command.Usagef("serve cfscheck: -period %v, want 1ms..1s", *period)
	case cfg.Procs < 1 || cfg.Procs > 1024:
		return command.Usagef("serve cfscheck: -host-procs %d, want 1..1024", cfg.Procs)
	case *batch < 1 || *batch > kcfs.MaxRecords:
		return command.Usagef("serve cfscheck: -batch %d, want 1..%d", *batch, kcfs.MaxRecords)
	}
	for _, m := range cfg.Millicores {
		if m < 10 || m > 1_000_000 {
			return command.Usagef("serve cfscheck: -millicores %d, want 10..1000000", m)
		}
	}
	if _, err := runtime.Apps(cfg.App); err != nil {
		return command.Usagef("serve cfscheck: -app: %v", err)
	}
	cfg.Cgroups, cfg.CgroupsErr = kernelCgroups("serve cfscheck", o.Stderr)
	if cfg.CgroupsErr != nil {
		fmt.Fprintf(o.Stderr, "serve cfscheck: kernel mode skipped: %v\n", cfg.CgroupsErr)
	}
	rep, err := kcfs.Check(ctx, cfg)
	if rep != nil {
		if *asJSON {
			enc := json.NewEncoder(o.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return fmt.Errorf("serve cfscheck: %w", err)
			}
		} else {
			printCheck(o.Stdout, rep)
		}
	}
	if err != nil {
		return fmt.Errorf("serve cfscheck: %w", err)
	}
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func printCheck(w io.Writer, r *kcfs.CheckReport) {
	fmt.Fprintf(w, "%s/%s: %.3f µs CPU per event (this process), %d inputs cycled, period %s, host GOMAXPROCS %d, %d CPUs, load average %.2f → %.2f\n%s\n",
		r.App, r.Op, r.CPUPerEvent, r.Inputs, r.Period, r.HostProcs, r.CPUs, r.Load1, r.Load1End, r.Cgroup)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tmillicores\tload\tevents/s\tcores\tused/quota\tcharged/quota\tthrottled\tp50 ms\tp95 ms\tp99 ms\t")
	for _, p := range r.Points {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.3f\t%.3f\t%.3f\t%d/%d\t%.2f\t%.2f\t%.2f\t\n", p.Mode, p.Millicores, p.Load, p.EPS, p.Cores,
			p.UsedOverQuota, p.ChargedOverQuota, p.Throttled, p.Periods, p.P50, p.P95, p.P99)
	}
	tw.Flush() //nolint:errcheck // stdout
}
