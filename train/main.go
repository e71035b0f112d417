package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"streamscale/train/run"
)

func main() {
	var o run.Options
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.StringVar(&o.Env, "env", "streamscale", "environment: streamscale or cartpole")
	fs.StringVar(&o.Profile, "profile", "pred", "streamscale workload profile: pred or etl")
	fs.Uint64Var(&o.Seed, "seed", 284572, "root seed of every random stream")
	fs.IntVar(&o.Steps, "steps", 0, "env steps to train for, rounded up to whole iterations (0: 500000 streamscale, 100000 cartpole)")
	fs.IntVar(&o.Envs, "envs", 0, "parallel environments (0: 14 streamscale, 8 cartpole)")
	fs.StringVar(&o.Out, "out", "", "output directory (default runs/<env>-seed<seed>)")
	fs.BoolVar(&o.Resume, "resume", false, "continue from <out>/checkpoint.ckpt")
	fs.BoolVar(&o.JSON, "json", false, "print the run summary as JSON on stdout")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines per update, 1 or 2 (0: automatic); results are identical")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "train: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "profile" {
			o.ProfileSet = true
		}
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run.Run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, run.ErrUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
