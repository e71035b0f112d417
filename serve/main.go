package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"streamscale/internal/command"
	"streamscale/serve/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], command.Process())
	stop()
	os.Exit(code)
}
