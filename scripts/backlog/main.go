//go:build unix

// Command backlog builds a large comb database and measures what an
// operator waits for on it with the real binary: open time, seek by
// timestamp, pop at the head and the tail, a retention sweep, comb check
// and comb backup, and the server's resident memory throughout.
//
//	go run ./scripts/backlog build -db /var/tmp/combbacklog/big.db -size 20GiB -limit 15m
//	go run ./scripts/backlog measure -db /var/tmp/combbacklog/big.db -comb /tmp/x/comb
//
// The build goes through the broker package with synchronous=NORMAL
// (building is not what is measured); the server measured runs with the
// default FULL.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fatal(fmt.Errorf("usage: backlog build|measure [flags]"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	db := fs.String("db", "/var/tmp/combbacklog/backlog.db", "database file")
	switch os.Args[1] {
	case "build":
		size := fs.String("size", "20GiB", "stop when the file reaches this size (GiB or MiB suffix)")
		limit := fs.Duration("limit", 15*time.Minute, "stop after this long even if smaller")
		_ = fs.Parse(os.Args[2:])
		n, err := parseSize(*size)
		if err != nil {
			fatal(err)
		}
		if err := build(ctx, *db, n, *limit); err != nil {
			fatal(err)
		}
	case "measure":
		comb := fs.String("comb", "/tmp/x/comb", "the comb binary")
		out := fs.String("out", "", "append the markdown table here")
		backupDir := fs.String("backup-dir", "", "where the backup copy goes (default beside -db); it is deleted after")
		skipFiles := fs.Bool("serve-only", false, "measure the server only, not comb check and comb backup")
		cutAt := fs.Float64("cut", 0.1, "retention keeps the log from this fraction of its time span on")
		reserve := fs.String("reserve", "5GiB", "refuse to start the backup unless this much would stay free beside the copy")
		_ = fs.Parse(os.Args[2:])
		r, err := parseSize(*reserve)
		if err != nil {
			fatal(err)
		}
		if err := measure(ctx, *db, *comb, *backupDir, *out, *skipFiles, *cutAt, r); err != nil {
			fatal(err)
		}
	default:
		fatal(fmt.Errorf("unknown command %q", os.Args[1]))
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "GiB"):
		s, mult = strings.TrimSuffix(s, "GiB"), 1<<30
	case strings.HasSuffix(s, "MiB"):
		s, mult = strings.TrimSuffix(s, "MiB"), 1<<20
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	return int64(f * float64(mult)), nil
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "backlog:", err)
	os.Exit(1)
}
