package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"streamscale/internal/command"
)

// SeedsFile is the summary across seeds in RunSeeds' output directory.
const SeedsFile = "seeds.json"

// SeedRun is one seed's line in seeds.json: its final diagnostics (the
// fields of its summary.json of the same names).
type SeedRun struct {
	Seed                     uint64   `json:"seed"`
	Out                      string   `json:"out"`
	PolicySHA256             string   `json:"policy_sha256"`
	EpRewMeanFinal           *float64 `json:"ep_rew_mean_final"`
	ExplainedVarianceFinal   *float64 `json:"explained_variance_final"`
	ExplainedVarianceMCFinal *float64 `json:"explained_variance_mc_final"`
	EntropyFractionFinal     *float64 `json:"entropy_fraction_final"`
	BestDevReward            *float64 `json:"best_dev_reward"`
}

// Seeds is seeds.json: every seed's run, in -seeds order, and the
// interquartile mean over seeds of each final figure (IQM: the mean of
// the values left when ⌊n/4⌋ are cut from each end of the sorted list, as
// scipy.stats.trim_mean(x, 0.25), the aggregate of Agarwal et al. 2021,
// "Deep RL at the edge of the statistical precipice"; over the seeds
// where the figure is defined; null if none is).
type Seeds struct {
	Recipe                      Recipe    `json:"recipe"` // the first seed's resolved recipe; the seeds differ only in seed
	ConfigFile                  string    `json:"config_file,omitempty"`
	ConfigSHA256                string    `json:"config_sha256,omitempty"`
	Runs                        []SeedRun `json:"runs"`
	IQMEpRewMeanFinal           *float64  `json:"iqm_ep_rew_mean_final"`
	IQMExplainedVarianceFinal   *float64  `json:"iqm_explained_variance_final"`
	IQMExplainedVarianceMCFinal *float64  `json:"iqm_explained_variance_mc_final"`
	IQMEntropyFractionFinal     *float64  `json:"iqm_entropy_fraction_final"`
}

// SeedDir is seed's output directory under out.
func SeedDir(out string, seed uint64) string {
	return filepath.Join(out, "seed-"+strconv.FormatUint(seed, 10))
}

// RunSeeds trains o once per seed of o.Seeds, each as Run would with
// Seed set to it and Out to SeedDir(o.Out, seed) (the same bytes but for
// the clock's fields), at most GOMAXPROCS at once with each run's
// goroutines cut to GOMAXPROCS / that (Options.Threads), then writes
// seeds.json into o.Out. Every seed's directory is checked before any
// trains; the first failure stops the others and is returned once all
// have stopped. Progress lines start with "seed n: "; the one-line
// reports are printed in seed order at the end, or with -json seeds.json.
func RunSeeds(ctx context.Context, o Options, cio command.IO) error {
	cio = cio.Fill()
	if len(o.Seeds) == 0 {
		return command.Usagef("train: -seeds: no seeds")
	}
	if o.Out == "" {
		o.Out = filepath.Join("runs", o.Env+"-seeds")
	}
	opts := make([]Options, len(o.Seeds))
	for i, seed := range o.Seeds {
		so := o
		so.Seeds, so.Seed, so.Out, so.JSON = nil, seed, SeedDir(o.Out, seed), false
		so.prefix = "seed " + strconv.FormatUint(seed, 10) + ": "
		if err := so.check(); err != nil {
			return err
		}
		if err := refuseOverwrite(so); err != nil {
			return err
		}
		opts[i] = so
	}
	procs := runtime.GOMAXPROCS(0)
	parallel := min(len(opts), procs)
	threads := max(1, procs/parallel)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stderr := &lockedWriter{w: cio.Stderr}
	sums := make([]Summary, len(opts))
	outs := make([]bytes.Buffer, len(opts))
	errs := make([]error, len(opts))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range opts {
		opts[i].Threads = threads
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			sc := cio
			sc.Stdout, sc.Stderr = &outs[i], stderr
			sums[i], errs[i] = runOne(ctx, opts[i], sc)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if err := firstCause(errs); err != nil {
		return err
	}
	seeds := Seeds{Recipe: sums[0].Recipe, ConfigFile: o.ConfigFile, ConfigSHA256: o.ConfigSHA256}
	seeds.Recipe.Seed = nil
	var ret, ev, mc, ent []float64
	for i, s := range sums {
		seeds.Runs = append(seeds.Runs, SeedRun{Seed: s.Seed, Out: opts[i].Out, PolicySHA256: s.PolicySHA256,
			EpRewMeanFinal: s.EpRewMeanFinal, ExplainedVarianceFinal: s.ExplainedVarianceFinal,
			ExplainedVarianceMCFinal: s.ExplainedVarianceMCFinal, EntropyFractionFinal: s.EntropyFractionFinal, BestDevReward: s.BestDevReward})
		ret, ev, mc, ent = appendDefined(ret, s.EpRewMeanFinal), appendDefined(ev, s.ExplainedVarianceFinal), appendDefined(mc, s.ExplainedVarianceMCFinal), appendDefined(ent, s.EntropyFractionFinal)
	}
	seeds.IQMEpRewMeanFinal, seeds.IQMExplainedVarianceFinal = IQM(ret), IQM(ev)
	seeds.IQMExplainedVarianceMCFinal, seeds.IQMEntropyFractionFinal = IQM(mc), IQM(ent)
	b, err := json.MarshalIndent(seeds, "", "  ")
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	b = append(b, '\n')
	if err := writeAtomic(filepath.Join(o.Out, SeedsFile), b); err != nil {
		return err
	}
	if o.JSON {
		_, err = cio.Stdout.Write(b)
		return err
	}
	for i := range outs {
		if _, err := cio.Stdout.Write(outs[i].Bytes()); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(cio.Stdout, "train: %d seeds: IQM final return %s, explained variance %s (MC %s), entropy %s; %s\n",
		len(sums), fmtOpt(seeds.IQMEpRewMeanFinal), fmtOpt(seeds.IQMExplainedVarianceFinal), fmtOpt(seeds.IQMExplainedVarianceMCFinal),
		fmtOpt(seeds.IQMEntropyFractionFinal), filepath.Join(o.Out, SeedsFile))
	return err
}

// firstCause is the first error that is not a cancellation caused by
// another seed's failure (or the first error, if all are).
func firstCause(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return first
}

func appendDefined(v []float64, x *float64) []float64 {
	if x == nil {
		return v
	}
	return append(v, *x)
}

// IQM is the interquartile mean of v: the mean after cutting ⌊n/4⌋ values
// from each end of the sorted values (scipy.stats.trim_mean(v, 0.25)); nil
// for no values.
func IQM(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	cut := len(s) / 4
	s = s[cut : len(s)-cut]
	var sum float64
	for _, x := range s {
		sum += x
	}
	return finite(sum / float64(len(s)))
}

func fmtOpt(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// lockedWriter serialises the writes of the seeds' progress lines (one
// Write per line).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
