package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/gcpace"
	"github.com/comb-broker/comb/internal/sdnotify"
	"github.com/spf13/cobra"
)

// serveConfig is every flag of comb serve.
type serveConfig struct {
	addr, db, sync, subMode string
	maxBody, maxDB          int64
	batchOps, maxConns      int
	metricsQueues           int
	maxQueues, maxFwd       int
	maxGroups               int
	maxSnaps, maxStreams    int
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
	fs.Int64Var(&c.maxBody, "max-body-bytes", httpd.DefaultMaxBodyBytes, "largest request body of a push, ack, transaction or stream cycle; larger ones get 413 (other routes take at most 1 MiB) (env COMB_MAX_BODY_BYTES)")
	m.setting(fs, "max-body-bytes", "")
	fs.Int64Var(&c.maxDB, "max-db-bytes", 0, "cap on the database file in bytes (0 = the disk's size); writes past it get 507 until retention or deletes make room (env COMB_MAX_DB_BYTES)")
	m.setting(fs, "max-db-bytes", "")
	fs.IntVar(&c.maxQueues, "max-queues", broker.DefaultMaxQueues, "most queues the database holds, every tenant's; a push or configure that would create one more gets 409 (0 = no limit) (env COMB_MAX_QUEUES)")
	m.setting(fs, "max-queues", "")
	fs.IntVar(&c.maxGroups, "max-groups", broker.DefaultMaxGroups, "most consumer-group subscriptions (a group on a queue) the database holds, every tenant's; a pop or seek that would subscribe one more gets 409 (0 = no limit) (env COMB_MAX_GROUPS)")
	m.setting(fs, "max-groups", "")
	fs.IntVar(&c.maxFwd, "max-forwarders", broker.DefaultMaxForwarders, "most forwarders the database holds, every tenant's; creating one more gets 409 (0 = no limit) (env COMB_MAX_FORWARDERS)")
	m.setting(fs, "max-forwarders", "")
	fs.IntVar(&c.maxSnaps, "max-snapshots", broker.DefaultMaxSnapshots, "most live snapshots the database holds, every tenant's; creating one more gets 409 (0 = no limit) (env COMB_MAX_SNAPSHOTS)")
	m.setting(fs, "max-snapshots", "")
	fs.IntVar(&c.maxStreams, "max-stream-queries", broker.DefaultMaxStreamQueries, "most streaming queries registered, every tenant's; registering one more gets 409 (0 = no limit) (env COMB_MAX_STREAM_QUERIES)")
	m.setting(fs, "max-stream-queries", "")
	fs.IntVar(&c.maxConns, "max-conns", 0, "most connections held open at once, parked long-polls included; past it a new one gets 503 (0 = default: 16384, or the open-file limit less 128 where lower) (env COMB_MAX_CONNS)")
	m.setting(fs, "max-conns", "")
	fs.IntVar(&c.metricsQueues, "metrics-queues", 0, "most queues, and consumer-group lags, a Prometheus scrape writes series for: the first by name; gauges count the rest (0 = default 10000) (env COMB_METRICS_QUEUES)")
	m.setting(fs, "metrics-queues", "")
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
	if c.maxConns < 0 {
		return usageErrorf("--max-conns %d: want 0 (the default) or a positive number of connections", c.maxConns)
	}
	if c.metricsQueues < 0 {
		return usageErrorf("--metrics-queues %d: want 0 (the default) or a positive number of queues", c.metricsQueues)
	}
	if c.maxQueues < 0 {
		return usageErrorf("--max-queues %d: want 0 (no limit) or a positive number of queues", c.maxQueues)
	}
	if c.maxGroups < 0 {
		return usageErrorf("--max-groups %d: want 0 (no limit) or a positive number of group subscriptions", c.maxGroups)
	}
	if c.maxFwd < 0 {
		return usageErrorf("--max-forwarders %d: want 0 (no limit) or a positive number of forwarders", c.maxFwd)
	}
	if c.maxSnaps < 0 {
		return usageErrorf("--max-snapshots %d: want 0 (no limit) or a positive number of snapshots", c.maxSnaps)
	}
	if c.maxStreams < 0 {
		return usageErrorf("--max-stream-queries %d: want 0 (no limit) or a positive number of streaming queries", c.maxStreams)
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
	if ownsLimit, ownsPercent := gcpace.Tune(m.Getenv); ownsLimit {
		followCtx, stopFollowing := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			gcpace.Follow(followCtx, ownsPercent)
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
		MaxConns: c.maxConns, MetricsQueues: c.metricsQueues, AllowInsecureBind: authCfg.allowInsecureBind}
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
	b, err := broker.Open(ctx, broker.Options{Path: c.db, Synchronous: c.sync, DefaultSubscriptionMode: c.subMode, MaxBatchOps: c.batchOps, MaxDBBytes: c.maxDB, MaxQueues: c.maxQueues, MaxGroups: c.maxGroups, MaxForwarders: c.maxFwd,
		MaxSnapshots: c.maxSnaps, MaxStreamQueries: c.maxStreams,
		RetentionInterval: ret.interval, SnapshotSweepInterval: ret.snapshots, EncryptionKey: ret.key, Logger: log})
	if err != nil {
		ln.Close()
		if errors.Is(err, combtype.ErrDamaged) {
			// The pages every start reads (schema, settings) are damaged:
			// say what to do, as a running server's reply to it does.
			return fmt.Errorf("%w: run comb check on the file and restore it from a backup (docs/operations.md)", err)
		}
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
	// A file replaced under the server (a backup restored over its path,
	// or removed) is served no more: the server stops, as on a signal,
	// and exits non-zero, so that a service manager starts it again on
	// the file now at the path (store/replaced.go).
	replaced := make(chan struct{})
	go func() {
		defer close(replaced)
		select {
		case <-b.Replaced():
			log.Error("stopping: the database file was replaced or removed while served; start comb again to serve the file now at the path", "db", c.db)
			fwd.Stop()
			stopServing()
		case <-serveCtx.Done():
		}
	}()
	err = srv.Serve(serveCtx, ln)
	stopServing()
	<-replaced
	fwd.Stop() // also when Serve ended on its own, as the listener failed
	select {
	case <-b.Replaced():
		err = errors.Join(err, fmt.Errorf("%w: %s", combtype.ErrReplaced, c.db))
	default:
	}
	if cerr := b.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}
