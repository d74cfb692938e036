// Command comb is a SQLite-first message broker for the edge: one binary,
// one database file, and the HTTP routes of the Queen broker.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/httpd"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &Main{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "comb:", err)
		os.Exit(1)
	}
}

// Main is the comb command, testable without a process.
type Main struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
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
  comb version           print the version
`

// Run runs the subcommand named by args[0].
func (m *Main) Run(ctx context.Context, args []string) error {
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
	case "version":
		fmt.Fprintln(m.Stdout, version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, usage)
		return nil
	default:
		fmt.Fprint(m.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func (m *Main) env(key, def string) string { return cmp.Or(m.Getenv(key), def) }

// defaultMemoryLimit is serve's Go heap soft limit unless GOMEMLIMIT is set.
const defaultMemoryLimit = 32 << 20

func (m *Main) serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	addr := fs.String("addr", m.env("COMB_ADDR", "127.0.0.1:6632"), "listen address (env COMB_ADDR)")
	dbPath := fs.String("db", m.env("COMB_DB", "comb.db"), "database file, created if missing (env COMB_DB)")
	syncMode := fs.String("sync", m.env("COMB_SYNC", "FULL"), "SQLite synchronous level: FULL (durable on power loss) or NORMAL (env COMB_SYNC)")
	subMode := fs.String("default-subscription-mode", m.env("DEFAULT_SUBSCRIPTION_MODE", "all"), "where a new consumer group starts when its first pop names no mode: all or new (env DEFAULT_SUBSCRIPTION_MODE)")
	authCfg := m.authFlags(fs)
	retCfg := m.retentionFlags(fs)
	webCfg := m.webFlags(fs)
	fwdCfg := m.forwardFlags(fs)
	maxBody := fs.Int64("max-body-bytes", httpd.DefaultMaxBodyBytes, "largest request body accepted; larger ones get 413")
	maxDB := fs.Int64("max-db-bytes", 0, "cap on the database file in bytes (0 = the disk's size); writes past it get 507 until retention or deletes make room")
	batchOps := fs.Int("max-batch-ops", 0, "most writes fused into one commit (0 = default 1024; 1 turns group commit off, to measure it)")
	pprofAddr := fs.String("pprof", m.env("COMB_PPROF", ""), "serve Go's profiles at /debug/pprof/ on this loopback address, e.g. 127.0.0.1:6060; off when empty (env COMB_PPROF)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *maxBody <= 0 {
		return fmt.Errorf("--max-body-bytes %d: want a positive number of bytes", *maxBody)
	}
	if *maxDB < 0 {
		return fmt.Errorf("--max-db-bytes %d: want 0 (no cap) or a positive number of bytes", *maxDB)
	}
	ret, err := retCfg.settings(m)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(m.Stderr, nil))
	if m.Getenv("GOMEMLIMIT") == "" {
		// A soft bound on the Go heap, so garbage from bursts of requests
		// is collected before the edge box's memory is; the live heap is a
		// few MB, and GOMEMLIMIT overrides this.
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	auth, err := authCfg.authenticator(log)
	if err != nil {
		return err
	}
	httpCfg := httpd.Config{Version: version, Logger: log, Auth: auth, MaxBodyBytes: *maxBody}
	if err := webCfg.config(&httpCfg); err != nil {
		return err
	}

	// An IP literal is checked before binding; a host name once bound. Both
	// come before the database, so a refused start leaves no file.
	if pre := literalAddr(*addr); pre != nil {
		if err := checkBind(pre, auth, authCfg.allowInsecureBind, nil); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := checkBind(ln.Addr(), auth, authCfg.allowInsecureBind, log); err != nil {
		ln.Close()
		return err
	}
	if *pprofAddr != "" {
		stopPprof, err := startPprof(*pprofAddr, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopPprof()
	}
	b, err := broker.Open(ctx, broker.Options{Path: *dbPath, Synchronous: *syncMode, DefaultSubscriptionMode: *subMode, MaxBatchOps: *batchOps, MaxDBBytes: *maxDB,
		RetentionInterval: ret.interval, SnapshotSweepInterval: ret.snapshots, EncryptionKey: ret.key, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	fwd, err := fwdCfg.start(ctx, b, log)
	if err != nil {
		b.Close()
		ln.Close()
		return err
	}
	httpCfg.Forwarders = fwd
	srv := &http.Server{
		Handler: httpd.New(b, httpCfg),
		// Headers must arrive promptly; a body may take minutes, as pushes
		// of up to 64 MiB cross slow edge links. The read deadline is
		// lifted once the body is read, so it never cuts a long-poll.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		// No write deadline, on purpose: a pop long-polls for as long as the
		// client's timeout parameter asks (30 s by default, unbounded), and a
		// server-wide deadline would cut those replies off. The pop handler
		// answers by its own deadline instead.
		WriteTimeout: 0,
		IdleTimeout:  120 * time.Second,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("comb serving", "addr", ln.Addr().String(), "db", *dbPath, "sync", *syncMode, "version", version)
	if m.Ready != nil {
		m.Ready(ln.Addr().String())
	}

	select {
	case err = <-serveErr:
	case <-ctx.Done():
		log.Info("shutting down")
	}
	// Forwarders stop first (a batch in flight is sent again after the
	// next start); parked long-polls answer at once; requests in flight
	// finish; the writer commits what it was handed; then the database closes.
	fwd.Stop()
	b.Drain()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil {
		log.Warn("shutdown", "err", serr)
	}
	if cerr := b.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
