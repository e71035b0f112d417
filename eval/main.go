package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"

	"streamscale/eval/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], cli.Options{
		Stdout: os.Stdout, Stderr: os.Stderr, Terminal: cli.IsTerminal(os.Stderr),
		Commit: cli.GitCommit(), GoVersion: runtime.Version(),
	})
	stop()
	os.Exit(code)
}
