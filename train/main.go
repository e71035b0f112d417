package main

import (
	"context"
	"os"
	"os/signal"

	"streamscale/internal/command"
	"streamscale/train/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], command.Process())
	stop()
	os.Exit(code)
}
