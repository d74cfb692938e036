package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/sdnotify"
	"github.com/spf13/cobra"
)

// serve's garbage collector settings unless GOMEMLIMIT and GOGC are set.
const (
	defaultMemoryLimit = 28 << 20
	defaultGCPercent   = 400
	// memoryLimitHeadroom is how many times what the collector must keep
	// (live heap and goroutine stacks) the soft limit is at least.
	memoryLimitHeadroom = 2
	// largeGCPercent paces the collector of a process that keeps more
	// than half the default limit (thousands of parked long-polls): a
	// cycle after twice as many new bytes as it keeps. One wake of
	// every parked pop allocates about as much as the pops keep (10 KB
	// against 12 KB each at 2,000), so at Go's default of 100 a cycle
	// came in the middle of half the wakes, scanning every parked
	// goroutine's stack while the replies waited: 0.27 s of CPU at
	// 2,000 parked, 0.76 s at 10,000, as much as the rest of the wake.
	largeGCPercent = 200
	// memoryBackstop is how many times what the collector must keep the
	// soft limit is while largeGCPercent paces it: above the heap goal
	// (live + 2 × (live + stacks), at most 3 × what it keeps), so it
	// only bounds what pacing alone would let through.
	memoryBackstop = 4
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
// above what the collector must keep, and whether it owns GOGC too.
func (m *App) tuneGC() (ownsLimit, ownsPercent bool) {
	if m.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
		ownsLimit = true
	}
	if m.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
		ownsPercent = true
	}
	return ownsLimit, ownsPercent
}

// memoryLimitFor is the soft limit for a process whose collector must keep
// live bytes of heap and stacks bytes of goroutine stacks, when serve does
// not own GOGC. A fixed limit below that makes the collector run back to
// back, each cycle scanning every stack again: 2,000 parked long-polls (a
// goroutine each, plus its connection's) were enough for the collector to
// take more CPU than the work, and to delay their wake-ups by seconds.
// With the limit at least memoryLimitHeadroom times what is live, a cycle
// comes after as many new bytes as it must scan, like Go's default GOGC
// of 100, never back to back.
func memoryLimitFor(live, stacks int64) int64 {
	return max(defaultMemoryLimit, memoryLimitHeadroom*(live+stacks))
}

// gcSettingsFor is the soft limit and GOGC for such a process when serve
// owns both. A small one keeps defaultGCPercent under the default limit.
// One that keeps more than half of it (thousands of parked long-polls) is
// paced by largeGCPercent, with the limit a backstop above the heap goal
// that gives. Where the limit paced it, the collector ran as soon as the
// heap met a limit computed from the live heap of the last cycle, which
// parking more pops had outgrown (at 10,000 parked, a cycle in each
// wake), and, at the limit, every new span
// of a wake's replies first returned free pages to the system (madvise),
// which the next span faulted back in: a sixth of the wake's CPU. GOGC's
// goal is taken from each cycle's own live heap and stacks.
func gcSettingsFor(live, stacks int64) (limit int64, percent int) {
	keep := live + stacks
	if memoryLimitHeadroom*keep <= defaultMemoryLimit {
		return defaultMemoryLimit, defaultGCPercent
	}
	return memoryBackstop * keep, largeGCPercent
}

// followMemoryLimit moves the soft limit (and GOGC, if ownsPercent) with
// the live heap and stacks until ctx ends.
func followMemoryLimit(ctx context.Context, ownsPercent bool) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(memoryFollowEvery)
	defer t.Stop()
	percent := defaultGCPercent
	var objects int64
	var collected time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		var v [3]int64
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = int64(min(s.Value.Uint64(), math.MaxInt64/4))
			}
		}
		if !ownsPercent {
			debug.SetMemoryLimit(memoryLimitFor(v[0], v[1]))
			continue
		}
		limit, p := gcSettingsFor(v[0], v[1])
		if p != percent {
			percent = p
			debug.SetGCPercent(p)
		}
		debug.SetMemoryLimit(limit)
		if collectWhileQuiet(v[0], v[1], v[2], objects) && time.Since(collected) >= quietCollectEvery {
			runtime.GC()
			collected = time.Now()
			metrics.Read(samples[2:])
			v[2] = int64(min(samples[2].Value.Uint64(), math.MaxInt64/4))
		}
		objects = v[2]
	}
}

const (
	// quietGrowth is how much the heap may grow in one memoryFollowEvery
	// and still be quiet: what a few requests a second allocate.
	quietGrowth = 1 << 20
	// quietCollectEvery bounds how often collectWhileQuiet collects. Each
	// time, the heap must also have grown by half of what is kept since
	// the last cycle, so at most it collects as GOGC 50 would, and only
	// while allocating less than quietGrowth a tick. Longer, a pause in a
	// slow burst of parking pops spent the collection, and the rest of
	// the burst parked after it.
	quietCollectEvery = 2 * time.Second
)

// collectWhileQuiet reports whether a process paced by largeGCPercent
// should collect now: its heap (objects bytes, prev a tick ago) has grown
// by more than half of what the last cycle kept (live heap and stacks)
// since that cycle, and stopped growing. That is what parking thousands
// of long-polls does: each holds its connection's buffers and request,
// live, but the heap goal was set by a cycle that ran before most of them
// parked, so the one push that wakes them all met the goal in the middle
// of its replies, and the collector scanned every parked stack while they
// waited (0.2-0.8 s of CPU in a wake of 2,000 to 10,000). Collected while
// they wait instead, the goal is taken from what they keep, and their
// wake fits in the room GOGC leaves. A busy heap (growing faster than
// quietGrowth a tick) is left to the pacer.
func collectWhileQuiet(live, stacks, objects, prev int64) bool {
	keep := live + stacks
	if memoryLimitHeadroom*keep <= defaultMemoryLimit {
		return false
	}
	return objects-live > keep/2 && objects-prev < quietGrowth
}

// serveConfig is every flag of comb serve.
type serveConfig struct {
	addr, db, sync, subMode string
	maxBody, maxDB          int64
	batchOps                int
	pprof                   string
	logLevel, logFormat     string
	printConfig             bool
	auth                    *authFlags
	ret                     *retentionFlags
	web                     *webFlags
	fwd                     *forwardConfig
	side                    *sidecarConfig
}

const serveLong = `Runs the broker on one SQLite file and serves Queen's HTTP API, the
console and the metrics until SIGINT or SIGTERM.

Every flag is also an environment variable (COMB_ and the flag's name in
capitals, - as _) and a key of the TOML file --config names: a flag wins
over the environment, which wins over the file, which wins over the
default. --print-config shows what comb serve would run with, and where
each value came from, secrets masked. Durations are Go durations: 500ms,
30s, 5m, 1h.`

// serveCmd is "comb serve".
func (m *App) serveCmd() *cobra.Command {
	c := &serveConfig{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the broker",
		Long:  serveLong,
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&c.addr, "addr", "127.0.0.1:6632", `listen address; "" turns TCP off (with --unix) (env COMB_ADDR)`)
	m.setting(fs, "addr", "")
	fs.StringVar(&c.db, "db", "comb.db", "database file, created if missing (env COMB_DB)")
	m.setting(fs, "db", "")
	fs.StringVar(&c.sync, "sync", "FULL", "SQLite synchronous level: FULL (durable on power loss) or NORMAL (env COMB_SYNC)")
	m.setting(fs, "sync", "")
	fs.StringVar(&c.subMode, "default-subscription-mode", "all", "where a new consumer group starts when its first pop names no mode: all or new (env COMB_DEFAULT_SUBSCRIPTION_MODE)")
	m.setting(fs, "default-subscription-mode", "DEFAULT_SUBSCRIPTION_MODE")
	c.auth = m.authFlags(fs)
	c.ret = m.retentionFlags(fs)
	c.web = m.webFlags(fs)
	c.fwd = m.forwardFlags(fs)
	fs.Int64Var(&c.maxBody, "max-body-bytes", httpd.DefaultMaxBodyBytes, "largest request body accepted; larger ones get 413 (env COMB_MAX_BODY_BYTES)")
	m.setting(fs, "max-body-bytes", "")
	fs.Int64Var(&c.maxDB, "max-db-bytes", 0, "cap on the database file in bytes (0 = the disk's size); writes past it get 507 until retention or deletes make room (env COMB_MAX_DB_BYTES)")
	m.setting(fs, "max-db-bytes", "")
	fs.IntVar(&c.batchOps, "max-batch-ops", 0, "most writes fused into one commit (0 = default 1024; 1 turns group commit off, to measure it) (env COMB_MAX_BATCH_OPS)")
	m.setting(fs, "max-batch-ops", "")
	c.side = m.sidecarFlags(fs)
	fs.StringVar(&c.pprof, "pprof", "", "serve Go's profiles at /debug/pprof/ on this loopback address, e.g. 127.0.0.1:6060; off when empty (env COMB_PPROF)")
	m.setting(fs, "pprof", "")
	fs.StringVar(&c.logLevel, "log-level", "info", "least level logged: debug, info, warn or error (env COMB_LOG_LEVEL)")
	m.setting(fs, "log-level", "")
	fs.StringVar(&c.logFormat, "log-format", "text", "log line format on stderr: text (key=value) or json (env COMB_LOG_FORMAT)")
	m.setting(fs, "log-format", "")
	fs.BoolVar(&c.printConfig, "print-config", false, "print the settings serve would run with, as a config file, secrets masked, and exit")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if c.printConfig {
			m.running = true
			return m.printConfig(m.Stdout, cmd)
		}
		if m.parsed != nil {
			return m.parsed(c)
		}
		return m.serve(cmd.Context(), c)
	}
	return cmd
}

// newLogger builds serve's logger from --log-level and --log-format.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", format)
}

// serve runs "comb serve": the broker and its HTTP server until ctx ends.
func (m *App) serve(ctx context.Context, c *serveConfig) error {
	if c.maxBody <= 0 {
		return usageErrorf("--max-body-bytes %d: want a positive number of bytes", c.maxBody)
	}
	if c.maxDB < 0 {
		return usageErrorf("--max-db-bytes %d: want 0 (no cap) or a positive number of bytes", c.maxDB)
	}
	ret, err := c.ret.settings()
	if err != nil {
		return err
	}
	log, err := newLogger(m.Stderr, c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	specs, err := c.fwd.check()
	if err != nil {
		return err
	}
	m.running = true
	for _, w := range m.settings.warnings {
		log.Warn(w)
	}
	m.settings.warnings = nil
	side, authCfg, webCfg, fwdCfg := c.side, c.auth, c.web, c.fwd
	ctx, stopWatch := side.watch(ctx, m.Stdin, log)
	defer stopWatch()
	if ownsLimit, ownsPercent := m.tuneGC(); ownsLimit {
		followCtx, stopFollowing := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			followMemoryLimit(followCtx, ownsPercent)
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
	httpCfg := httpd.Config{Version: version, Logger: log, Auth: auth, MaxBodyBytes: c.maxBody,
		AllowInsecureBind: authCfg.allowInsecureBind}
	if err := webCfg.config(&httpCfg); err != nil {
		return err
	}

	// The address is checked, and bound, before the database is opened,
	// so a refused start leaves no file.
	ln, tcpAddr, err := side.listen(c.addr, &httpCfg)
	if errors.Is(err, httpd.ErrInsecureBind) {
		return fmt.Errorf("refusing to serve %s without auth: configure --jwt-secret, --jwt-public-key or --jwks-file, "+
			"bind a loopback address, or pass --allow-insecure-bind (env COMB_ALLOW_INSECURE_BIND=true)", c.addr)
	}
	if err != nil {
		return err
	}
	if c.pprof != "" {
		stopPprof, err := startPprof(c.pprof, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopPprof()
	}
	b, err := broker.Open(ctx, broker.Options{Path: c.db, Synchronous: c.sync, DefaultSubscriptionMode: c.subMode, MaxBatchOps: c.batchOps, MaxDBBytes: c.maxDB,
		RetentionInterval: ret.interval, SnapshotSweepInterval: ret.snapshots, EncryptionKey: ret.key, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	fwd, err := fwdCfg.start(ctx, b, specs, log)
	if err != nil {
		b.Close()
		ln.Close()
		return err
	}
	httpCfg.Forwarders = fwd
	srv := httpd.NewServer(b, httpCfg)
	log.Info("comb serving", "addr", ln.Addr().String(), "db", c.db, "sync", c.sync, "version", version)
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
