// Command comb is a SQLite-first message broker for the edge: one binary,
// one database file, and the HTTP routes of the Queen broker.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/comb-broker/comb/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
