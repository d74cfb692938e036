package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/sdnotify"
)

// serve's garbage collector settings unless GOMEMLIMIT and GOGC are set.
const (
	defaultMemoryLimit = 28 << 20
	defaultGCPercent   = 400
	// memoryLimitHeadroom is how many times what the collector must keep
	// (live heap and goroutine stacks) the soft limit is at least.
	memoryLimitHeadroom = 2
	// memoryFollowEvery is how often the soft limit follows them.
	memoryFollowEvery = 250 * time.Millisecond
)

// tuneGC sets the collector for a broker whose live heap is a few MB while
// every request allocates: with Go's default GOGC of 100 the heap is
// collected each time it doubles, a few times a second under load. A
// higher GOGC collects far less often, and the soft memory limit still
// bounds the heap, so garbage from bursts of requests is collected before
// the edge box's memory is. Measured with the bench module: server CPU per
// message and the batch-100 push rate both improve (see the README's
// performance section). GOGC and GOMEMLIMIT override these. It reports
// whether serve owns the soft limit, which followMemoryLimit then keeps
// above what the collector must keep.
func (m *App) tuneGC() (ownsLimit bool) {
	if m.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
		ownsLimit = true
	}
	if m.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	return ownsLimit
}

// memoryLimitFor is the soft limit for a process whose collector must keep
// live bytes of heap and stacks bytes of goroutine stacks. A fixed limit
// below that makes the collector run back to back, each cycle scanning
// every stack again: 2,000 parked long-polls (a goroutine each, plus its
// connection's) were enough for the collector to take more CPU than the
// work, and to delay their wake-ups by seconds. With the limit at least
// memoryLimitHeadroom times what is live, a cycle comes after as many new
// bytes as it must scan, like Go's default GOGC of 100, never back to back.
func memoryLimitFor(live, stacks int64) int64 {
	return max(defaultMemoryLimit, memoryLimitHeadroom*(live+stacks))
}

// followMemoryLimit moves the soft limit with the live heap and stacks
// until ctx ends.
func followMemoryLimit(ctx context.Context) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	t := time.NewTicker(memoryFollowEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		var v [2]int64
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = int64(min(s.Value.Uint64(), math.MaxInt64/4))
			}
		}
		debug.SetMemoryLimit(memoryLimitFor(v[0], v[1]))
	}
}

// serve runs "comb serve": flags and environment, then the broker and its
// HTTP server until ctx ends.
func (m *App) serve(ctx context.Context, args []string) error {
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
	side := m.sidecarFlags(fs)
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
	ctx, stopWatch := side.watch(ctx, m.Stdin, log)
	defer stopWatch()
	if m.tuneGC() {
		followCtx, stopFollowing := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			followMemoryLimit(followCtx)
		}()
		defer func() {
			stopFollowing()
			<-followed
		}()
	}
	auth, err := authCfg.authenticator(log)
	if err != nil {
		return err
	}
	httpCfg := httpd.Config{Version: version, Logger: log, Auth: auth, MaxBodyBytes: *maxBody,
		AllowInsecureBind: authCfg.allowInsecureBind}
	if err := webCfg.config(&httpCfg); err != nil {
		return err
	}

	// The address is checked, and bound, before the database is opened,
	// so a refused start leaves no file.
	ln, tcpAddr, err := side.listen(*addr, &httpCfg)
	if errors.Is(err, httpd.ErrInsecureBind) {
		return fmt.Errorf("refusing to serve %s without auth: configure --jwt-secret, --jwt-public-key or --jwks-file, "+
			"bind a loopback address, or pass --allow-insecure-bind (env COMB_ALLOW_INSECURE_BIND=1)", *addr)
	}
	if err != nil {
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
	srv := httpd.NewServer(b, httpCfg)
	log.Info("comb serving", "addr", ln.Addr().String(), "db", *dbPath, "sync", *syncMode, "version", version)
	if m.Ready != nil {
		m.Ready(ln.Addr().String())
	}
	if err := side.announce(m.Stdout, tcpAddr); err != nil {
		log.Warn("announce ready", "err", err)
	}
	// Under systemd (Type=notify): ready now, a watchdog ping while the
	// database answers, and "stopping" once ctx ends.
	sd, err := sdnotify.FromEnv(m.Getenv)
	if err != nil {
		log.Warn("service manager watchdog off", "err", err)
	}
	defer sd.Serving(ctx, log, b.Ping)()
	// When ctx ends, forwarders stop first (a batch in flight is sent
	// again after the next start), before the server drains the broker,
	// after which their pops would no longer wait. Serve then returns once
	// parked long-polls have answered and requests in flight have
	// finished; closing the broker commits what the writer was handed,
	// checkpoints the WAL and closes the file.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	stopFirst := context.AfterFunc(ctx, func() {
		fwd.Stop()
		stopServing()
	})
	defer stopFirst()
	err = srv.Serve(serveCtx, ln)
	fwd.Stop() // also when Serve ended on its own, as the listener failed
	if cerr := b.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}
