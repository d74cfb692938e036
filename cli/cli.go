// Package cli is the comb command: its subcommands, flags, configuration
// and output. The root package main only calls Main.
package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Main runs the comb command with args (without the program name) and
// returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	m := &App{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv}
	// Started by the Windows service manager: serve until it says stop.
	if ran, err := m.runAsService(args); ran {
		if err != nil {
			fmt.Fprintln(stderr, "comb:", err)
			return 1
		}
		return 0
	}
	if err := m.Run(ctx, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 2
		}
		fmt.Fprintln(stderr, "comb:", err)
		return 1
	}
	return 0
}

// App is the comb command, testable without a process.
type App struct {
	Stdout, Stderr io.Writer
	// Stdin is watched for EOF by serve --exit-on-stdin-eof; nil never ends.
	Stdin  io.Reader
	Getenv func(string) string
	// Ready, if set, receives the listening address once serve accepts connections.
	Ready func(addr string)
}

const usage = `comb is a SQLite-first message broker speaking Queen's HTTP API.

Usage:
  comb serve [flags]     run the broker (comb serve -h for flags)
  comb dlq [redrive]     list or re-drive dead-lettered messages (comb dlq -h)
  comb groups            list consumer groups with their lag (comb groups -h)
  comb seek              move a consumer group's cursor: replay or skip (comb seek -h)
  comb quarantine        list damaged segments put aside (comb quarantine -h)
  comb check --db FILE   verify a database offline (comb check -h)
  comb backup --out COPY consistent copy of a running server or a file (comb backup -h)
  comb forward           list, create, pause, resume or delete forwarders (comb forward -h)
  comb healthcheck       exit 0 when a server's /health answers 200 (comb healthcheck -h)
  comb service           install, start, stop or uninstall the Windows service (comb service -h)
  comb version           print the version, commit and build date (also comb --version)
`

// Run runs the subcommand named by args[0].
func (m *App) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "serve":
		return m.serve(ctx, args[1:])
	case "dlq":
		return m.dlq(ctx, args[1:])
	case "groups":
		return m.groups(ctx, args[1:])
	case "seek":
		return m.seekCmd(ctx, args[1:])
	case "quarantine":
		return m.quarantine(ctx, args[1:])
	case "check":
		return m.check(ctx, args[1:])
	case "backup":
		return m.backup(ctx, args[1:])
	case "forward":
		return m.forwardCmd(ctx, args[1:])
	case "service":
		return m.service(ctx, args[1:])
	case "healthcheck":
		return m.healthcheck(ctx, args[1:])
	case "version", "--version", "-version":
		readBuildInfo().print(m.Stdout)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, usage)
		return nil
	default:
		fmt.Fprint(m.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func (m *App) env(key, def string) string { return cmp.Or(m.Getenv(key), def) }
