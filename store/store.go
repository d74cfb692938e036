// Package store is comb's SQLite database: one writer connection that
// group-commits every pending write, a pool of readers, segments of
// lz4-compressed frames, cursors, leases and the dead-letter table.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/migrations"
	"github.com/comb-broker/comb/seek"
	"github.com/comb-broker/comb/store/segment"
)

// Defaults for Options.
const (
	DefaultReadConns   = 4
	DefaultMaxBatchOps = 1024
	// DefaultMaxBatchBytes bounds the payload bytes fused into one commit.
	DefaultMaxBatchBytes = 32 << 20
	// DefaultBusyTimeout is how long a commit waits for another program's
	// write transaction on the file before its writes fail with
	// combtype.ErrFileBusy.
	DefaultBusyTimeout = 10 * time.Second
)

// Page cache per connection, as SQLite's negative KiB. Each of the five
// connections' caches grows to its bound as the file grows (64 MiB each
// before), which is what a busy server's RSS was made of. A commit touches
// the right edges of a few indexes and the tail of the log, and a pop reads
// recent segments, which the OS page cache holds as well.
const (
	writerCacheKiB = "-8192"
	readerCacheKiB = "-2048"
)

// Options configure Open.
type Options struct {
	// Path of the database file; created if missing with mode 0600.
	Path string
	// Synchronous is SQLite's synchronous level for the writer: "FULL"
	// (default: every answered write survives power loss) or "NORMAL"
	// (survives a crash of comb, may lose the last commits on power loss).
	Synchronous string
	// ReadConns is the size of the reader pool. Default DefaultReadConns.
	ReadConns int
	// MaxBatchOps caps how many pending writes one commit fuses. Default DefaultMaxBatchOps.
	MaxBatchOps int
	// MaxBatchBytes caps the payload bytes one commit fuses. Default DefaultMaxBatchBytes.
	MaxBatchBytes int
	// Clock is read for every timestamp the store writes. Default the wall clock.
	Clock clock.Clock
	// OnCommit, if set, is called after every durable commit with the number
	// of writes fused into it and the time from begin to durable. It runs on
	// the writer goroutine, so it must return at once.
	OnCommit func(ops int, d time.Duration)
	// MaxDBBytes caps the database file (0 = no cap, only the disk's
	// size). A write that would pass it fails with ErrFull and stores
	// nothing; reads, and writes that free space, keep working.
	MaxDBBytes int64
	// MaxQueues bounds how many queues the database holds, every tenant's
	// together (0 = no bound). A write that would create one more fails
	// with combtype.ErrQueueLimit and stores nothing.
	MaxQueues int
	// MaxGroups bounds how many subscriptions of a consumer group to a
	// queue the database holds, every tenant's together (0 = no bound).
	// A write that would subscribe a group to one more queue fails with
	// combtype.ErrGroupLimit and stores nothing.
	MaxGroups int
	// MaxForwarders bounds how many forwarders the database holds, every
	// tenant's together (0 = no bound). Storing one more fails with
	// combtype.ErrForwarderLimit.
	MaxForwarders int
	// MaxSnapshots bounds how many live snapshots the database holds,
	// every tenant's together (0 = no bound). Creating one more fails
	// with combtype.ErrSnapshotLimit.
	MaxSnapshots int
	// MaxStreamQueries bounds how many streaming queries are registered,
	// every tenant's together (0 = no bound). Registering one more fails
	// with combtype.ErrStreamQueryLimit.
	MaxStreamQueries int
	// EncryptionKey is the AES-256 key (EncryptionKeySize bytes) that seals
	// the payloads of queues with encryptionEnabled. Nil stores them in
	// clear; frames sealed earlier then fail to read with ErrNoEncryptionKey.
	EncryptionKey []byte
	// Logger receives what the store reports on its own, such as a segment
	// put aside. Default slog.Default().
	Logger *slog.Logger
	// DefaultSubscriptionMode is where a group starts on its first pop
	// when the pop names neither mode nor time: "all" (default) or "new".
	DefaultSubscriptionMode string
	// LiveTotalsPartitions is the most partitions a queue may have for its
	// totals to be summed on every read; above it they come from a sum
	// made in the background (totals.go). Default
	// DefaultLiveTotalsPartitions.
	LiveTotalsPartitions int
	// LiveGroupPositions is the most positions (partitions times the
	// groups on the queue) a queue within LiveTotalsPartitions may have
	// for its totals and group figures to be summed on every read; above
	// it they come from the background sum too. Default
	// DefaultLiveGroupPositions.
	LiveGroupPositions int
	// LiveSummaryPartitions is the most partitions a tenant may have for
	// its Summary (the status and overview figures) to be summed on every
	// read; above it they come from a sum made in the background
	// (totals.go). Default DefaultLiveSummaryPartitions.
	LiveSummaryPartitions int
	// BusyTimeout is how long a commit waits for another program's write
	// transaction on the file (a sqlite3 session, a DB browser) to end;
	// past it the commit's writes fail with combtype.ErrFileBusy, having
	// written nothing. Default DefaultBusyTimeout.
	BusyTimeout time.Duration
}

// Store is the database. All writes go through one goroutine that fuses
// whatever is pending into one transaction; reads use a separate pool.
type Store struct {
	path       string
	clock      clock.Clock
	defaultSub string    // subscription mode of a first pop that names none
	wdb        *sql.DB   // holds wconn
	wconn      *sql.Conn // the writer's one connection, used only by the writer goroutine
	rdb        *sql.DB   // readers, query_only
	lock       *dbLock   // held while open: one comb writes the file

	wstmts *stmtCache // statements prepared on the writer's connection
	// wstatements counts the statements run in the writer's transactions:
	// what holds every other write is what tests bound.
	wstatements atomic.Int64
	rstmts      *stmtCache // statements prepared on the reader pool
	r           readDB     // reads through rstmts

	ops chan *writeOp
	// handed is the parked pops whose claims the writer was handed by
	// its commits and has not made yet; only the writer touches it.
	handed   []*ParkedPop
	maxOps   int
	maxBytes int
	ctx      context.Context
	cancel   context.CancelFunc
	stopped  chan struct{} // closed when the writer goroutine has returned
	closeMu  sync.Mutex
	closed   bool
	enc      segment.Encoder // writer goroutine only
	// segSeq is the highest segment id handed out (writer goroutine only):
	// segments are numbered in commit order, store-wide, and a group's
	// subscription records the number it registered at (see segmentSeq).
	segSeq int64
	// nextIDs are the least ids new queues and partitions may take
	// (writer goroutine only; idFloors).
	nextIDs idFloor
	// dataVersion is the writer connection's PRAGMA data_version when it
	// last looked, and outsideLogged when another program's commits were
	// last logged (writer goroutine only; outside.go).
	dataVersion   int64
	outsideLogged time.Time
	// idEpoch is the epoch the database's message ids are derived with
	// (ids.go): set by the writer, read by any goroutine.
	idEpoch atomic.Pointer[string]
	keyCeil keyCeilings  // writer goroutine only
	queues  boundCount   // writer goroutine only: what MaxQueues is checked against (queuelimit.go)
	groups  boundCount   // writer goroutine only: what MaxGroups is checked against (grouplimit.go)
	shared  sharedSegs   // large segments' decoded bytes, while something holds them (segcache.go)
	tiling  tilingBreaks // segment rows found not to follow each other, logged once (damage.go)
	// maxForwarders is Options.MaxForwarders: forwarders are few, so the
	// store of a new one counts them.
	maxForwarders int
	recent        recentKeys // writer goroutine only: narrows dedup lookups (push.go)
	leased        recentLeases
	reads         shardReads      // how fresh what stream state readers were served is, per shard
	rows          rowCache        // writer goroutine only
	crypt         *segment.Cipher // nil without an encryption key
	watch         watchers
	// probes are the writer's attempts at the write lock for callers
	// waiting out another program's, and fileBusyNow the writer's
	// fileBusy for them (fileprobe.go).
	probes      fileProbes
	fileBusyNow atomic.Bool

	turn    turns // round robin over partitions, per (queue, group)
	subs    subscribedSet
	noWaves bool // claims are never fused (tests and benchmarks compare)
	stats   Stats
	tot     totalsCache
	// liveTotals is Options.LiveTotalsPartitions.
	liveTotals int
	// livePositions is Options.LiveGroupPositions.
	livePositions int
	// liveSummary is Options.LiveSummaryPartitions.
	liveSummary int
	onCommit    func(ops int, d time.Duration) // nil = none
	log         *slog.Logger
	// syncLevel is the synchronous level commits keep their promise at;
	// syncNow the level the writer's connection is set to, NORMAL for a
	// commit of claims only (writer goroutine only).
	syncLevel, syncNow string
	// undoInMemory is whether the writer's connection keeps its statement
	// journal in memory now (setUndo).
	undoInMemory bool

	// seeks are the seeks to the end of a queue under way (seekend.go);
	// seekChunk, set only by tests, is the partitions one of their ops
	// moves (0: seekChunkPartitions), and seekChunkDone runs after each
	// op after the first (of a quarantine restore, after each op more
	// will follow).
	seeks         seekMarks
	seekChunk     int
	seekChunkDone func()

	// afterLocate, set only by tests, runs between locating acks and
	// submitting them, where a write committed meanwhile would land.
	afterLocate func()

	// Groups a pop found nothing due for, and the commit sequence they
	// hold at, odd while a commit may be becoming visible (idle.go).
	idle      idleMarks
	commitSeq atomic.Int64

	// The writer's view of the disk (reserve.go, wal.go).
	disk        diskReserve
	pageSize    int64
	busyTimeout int64
	// fileBusy is set while commits find another program's write
	// transaction on the file (writer goroutine only).
	fileBusy bool
	walPath  string
	// statsCheckedAt is when the writer last looked for planner
	// statistics, statsFailing whether that look failed (planstats.go;
	// writer goroutine only).
	statsCheckedAt time.Time
	statsFailing   bool
	// replaced is set once the path no longer names the locked file;
	// replacedCh is closed then, and walEmptied set once the WAL has been
	// copied into the file (replaced.go; set on the writer goroutine).
	replaced   atomic.Bool
	replacedCh chan struct{}
	walEmptied bool
	noIdentity bool   // the check is off (replaced.go)
	absPath    string // path made absolute at open: the one checked
	// head is the file's header as the writer last read it, inPlace set
	// once it told the file overwritten (replaced.go).
	head    fileHead
	inPlace bool
	// side is the -wal and -shm found at open, sideGone the one found
	// removed since (replaced.go), walCut or shmCut set once one was found
	// cut short (sidecut.go).
	side           sideFiles
	sideGone       string
	walCut, shmCut bool
	// unwritable is set while commits fail because the file system
	// refuses the file (writer.go, noteUnwritable).
	unwritable atomic.Bool
	// ingest keeps the passed minutes of the ingest series (ingestmemo.go).
	ingest ingestMemo
	// vacuumOff is set while the file's auto_vacuum is not INCREMENTAL,
	// once the writer has said so (vacuum.go; writer goroutine only).
	vacuumOff bool
	// dedupJSON writes every commit's dedup rows as a JSON array, as
	// before small ones went as bound values (benchmarks compare).
	dedupJSON bool
	// partitionRowsEach advances each written partition's row in a
	// statement of its own, as before they went together (benchmarks
	// compare).
	partitionRowsEach bool
	// maxSnapshots and maxStreamQueries are Options.MaxSnapshots and
	// Options.MaxStreamQueries, counted at each create up to the bound.
	maxSnapshots, maxStreamQueries int
}

// Stats are counters of the writer, read with atomic loads.
type Stats struct {
	Commits      atomic.Int64
	CommitOps    atomic.Int64
	Segments     atomic.Int64
	Frames       atomic.Int64
	CommitMicros atomic.Int64
	// LazyCommits counts commits of lazy ops only, made without a sync of
	// their own.
	LazyCommits atomic.Int64
	// Quarantined counts segments put aside because they failed their
	// checksum or did not decode.
	Quarantined atomic.Int64
	// FramesEvicted counts frames retention removed before a group that
	// still needed them consumed them, as claims met them.
	FramesEvicted atomic.Int64
	// ListedPartitions counts the partitions whose cursors message
	// listings read: what a page costs beyond its segments.
	ListedPartitions atomic.Int64
	// WaveClaims counts the claims applied fused with others of their
	// queue (claimWaves) rather than each alone.
	WaveClaims atomic.Int64
	// ReadSummedRows counts the rows read to sum large queues'
	// consumer-group figures. Only the refresher makes those sums: no
	// request waits for one (groupstats.go).
	ReadSummedRows atomic.Int64
	// Damaged counts the statements of the server's connections that met
	// a damaged page of the file (sqlconn.go) since it opened.
	Damaged atomic.Int64
	// OutsideCommits counts the times the writer found that another
	// program had committed to the file since it last looked (outside.go).
	OutsideCommits atomic.Int64
	// WriterPanics counts the writer's commits that panicked and were
	// rolled back (writer.go); any is a fault of comb's worth a report.
	WriterPanics atomic.Int64
	// SegmentsDecoded counts the segments read and decoded to hand out
	// frames (scanSegments): what a read or a dead-letter copy costs.
	SegmentsDecoded atomic.Int64
	// QueueLooks counts the queues pops looked at for something to take:
	// one for a pop of a queue, as many as it reads for a pop of a
	// namespace or task.
	QueueLooks atomic.Int64
	// QueueWalks counts the pops and claims that read a queue's partitions
	// in turn to find what is due for a group, rather than the few that
	// can be (dueSuspects, idle.go): at a million partitions with nothing
	// due, seconds each.
	QueueWalks atomic.Int64
	// WriterWalks counts those of QueueWalks made by claims, inside the
	// writer, where every other write waits for them.
	WriterWalks atomic.Int64
}

// Open opens or creates the database at opts.Path, applies migrations and
// starts the writer.
func Open(ctx context.Context, opts Options) (_ *Store, err error) {
	if opts.Path == "" {
		return nil, fmt.Errorf("open store: %w: empty path", combtype.ErrInvalid)
	}
	syncLevel := strings.ToUpper(cmp.Or(opts.Synchronous, "FULL"))
	if syncLevel != "FULL" && syncLevel != "NORMAL" && syncLevel != "EXTRA" {
		return nil, fmt.Errorf("open store: %w: synchronous %q", combtype.ErrInvalid, opts.Synchronous)
	}
	if opts.MaxDBBytes < 0 {
		return nil, fmt.Errorf("open store: %w: max db bytes %d", combtype.ErrInvalid, opts.MaxDBBytes)
	}
	if opts.MaxQueues < 0 || opts.MaxGroups < 0 || opts.MaxForwarders < 0 || opts.MaxSnapshots < 0 || opts.MaxStreamQueries < 0 {
		return nil, fmt.Errorf("open store: %w: max queues %d, max groups %d, max forwarders %d, max snapshots %d, max stream queries %d",
			combtype.ErrInvalid, opts.MaxQueues, opts.MaxGroups, opts.MaxForwarders, opts.MaxSnapshots, opts.MaxStreamQueries)
	}
	if opts.BusyTimeout < 0 {
		return nil, fmt.Errorf("open store: %w: busy timeout %v", combtype.ErrInvalid, opts.BusyTimeout)
	}
	busyMillis := strconv.FormatInt(cmp.Or(opts.BusyTimeout, DefaultBusyTimeout).Milliseconds(), 10)
	// The lock comes first: it opens the file (creating it owner-only from
	// the first byte) on a descriptor held until Close, and nothing after
	// opens the file other than through SQLite's connections, whose locks a
	// close of any other descriptor would drop (see lock.go).
	if err := missingDatabase(opts.Path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	lock, err := lockDB(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	defer func() {
		if err != nil {
			lock.release()
			// Another program's write transaction on the file (SQLite's
			// locks are not comb's) fails the open after the busy timeout.
			err = classify(err)
		}
	}()
	if err := checkSideFiles(opts.Path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := checkHeader(lock, opts.Path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}

	crypt, err := newPayloadCipher(opts.EncryptionKey)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s := &Store{
		crypt:         crypt,
		lock:          lock,
		path:          opts.Path,
		onCommit:      opts.OnCommit,
		log:           cmp.Or(opts.Logger, slog.Default()),
		clock:         cmp.Or[clock.Clock](opts.Clock, clock.Real{}),
		defaultSub:    cmp.Or(opts.DefaultSubscriptionMode, seek.ModeAll),
		maxOps:        cmp.Or(opts.MaxBatchOps, DefaultMaxBatchOps),
		maxBytes:      cmp.Or(opts.MaxBatchBytes, DefaultMaxBatchBytes),
		stopped:       make(chan struct{}),
		replacedCh:    make(chan struct{}),
		liveTotals:    cmp.Or(opts.LiveTotalsPartitions, DefaultLiveTotalsPartitions),
		livePositions: cmp.Or(opts.LiveGroupPositions, DefaultLiveGroupPositions),
		liveSummary:   cmp.Or(opts.LiveSummaryPartitions, DefaultLiveSummaryPartitions),
		queues:        boundCount{max: int64(opts.MaxQueues)},
		groups:        boundCount{max: int64(opts.MaxGroups)},
		maxForwarders: opts.MaxForwarders,
		maxSnapshots:  opts.MaxSnapshots, maxStreamQueries: opts.MaxStreamQueries,
	}
	s.syncLevel, s.syncNow = syncLevel, syncLevel
	s.watch.init()
	// Checked as the path named the file at open, whatever directory a
	// program embedding the store changes to later.
	s.absPath = s.path
	if abs, err := filepath.Abs(s.path); err == nil {
		s.absPath = abs
	}
	if s.pathReplaced() {
		// The path and the descriptor disagree from the start: a file
		// system without one identity for a file (replaced.go).
		s.noIdentity = true
		s.log.Warn("the file system does not show the database file as one file by path and by descriptor: a file replaced under the server will not be noticed",
			"path", s.path)
	}
	s.probes.init()
	defer func() {
		if err != nil {
			if s.wconn != nil {
				s.wconn.Close()
			}
			if s.wdb != nil {
				s.wdb.Close()
			}
			if s.rdb != nil {
				s.rdb.Close()
			}
		}
	}()

	if err := syncWithFdatasync(); err != nil {
		return nil, err
	}
	base := "file:" + (&url.URL{Path: opts.Path}).EscapedPath()
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(0)"
	// The writer's connection sets nothing that writes before the schema
	// is checked: switching to WAL, or auto_vacuum, must not happen to a
	// file that is not comb's.
	// Before SQLite's recovery reads the WAL and drops what follows a
	// damaged frame (waldamage.go).
	if kept, scan, err := keepDamagedWAL(opts.Path, time.Now()); err != nil {
		s.log.Warn("could not read the WAL before opening the database", "path", opts.Path, "err", err)
	} else if kept != "" {
		s.log.Error("the WAL is damaged: SQLite's recovery keeps the commits before the damage and drops those after it, writes that had been answered; the WAL as found is kept for recovery by hand (docs/operations.md)",
			"path", opts.Path, "headerDamaged", scan.header, "damagedFrame", scan.badFrame, "atByte", scan.droppedAt,
			"commitsKept", scan.kept, "commitsDropped", scan.dropped, "copy", kept)
	}
	s.wdb, err = openSQLite(base+"?_pragma=busy_timeout("+busyMillis+")&_pragma=foreign_keys(0)"+
		"&_pragma=cache_size("+writerCacheKiB+")&_pragma=synchronous("+syncLevel+")", &s.stats.Damaged)
	if err != nil {
		return nil, fmt.Errorf("open writer: %w", err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	version, mendRows, err := checkSchema(ctx, s.wdb, opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// auto_vacuum must come first: it only takes effect on a file that has
	// no table yet, so it shapes new databases and is a no-op on older ones
	// (VACUUM once converts those). Retention then returns the pages it frees
	// with PRAGMA incremental_vacuum.
	if _, err := s.wdb.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return nil, fmt.Errorf("set auto_vacuum: %w", err)
	}
	var mode string
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return nil, fmt.Errorf("set journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return nil, fmt.Errorf("open store: journal_mode is %q, want wal", mode)
	}

	if mendRows {
		if err := mendVersionRows(ctx, s.wdb, version); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.log.Warn("goose_db_version's rows did not say the version the schema is at (changed by another program?); written again",
			"version", version)
	}
	goose.SetLogger(goose.NopLogger())
	provider, err := goose.NewProvider(goose.DialectSQLite3, s.wdb, migrations.FS)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	if err := s.mendSchema(ctx); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}

	s.rdb, err = openSQLite(base+"?"+pragmas+"&_pragma=cache_size("+readerCacheKiB+")&_pragma=query_only(1)", &s.stats.Damaged)
	if err != nil {
		return nil, fmt.Errorf("open readers: %w", err)
	}
	readers := cmp.Or(opts.ReadConns, DefaultReadConns)
	s.rdb.SetMaxOpenConns(readers)
	s.rdb.SetMaxIdleConns(readers)

	// The writer keeps one connection and runs BEGIN/COMMIT on it itself, so
	// statements prepared on it once stay valid across transactions.
	if s.wconn, err = s.wdb.Conn(ctx); err != nil {
		return nil, fmt.Errorf("writer connection: %w", err)
	}
	if opts.MaxDBBytes > 0 {
		if err := s.capSize(ctx, opts.MaxDBBytes); err != nil {
			return nil, err
		}
	}
	if err := s.initDisk(ctx); err != nil {
		return nil, err
	}
	if s.segSeq, err = segmentSeq(ctx, s.wconn); err != nil {
		return nil, err
	}
	if s.nextIDs, err = idFloors(ctx, s.wconn); err != nil {
		return nil, err
	}
	if err := s.readDataVersion(ctx); err != nil {
		return nil, err
	}
	if err := s.loadIDEpoch(ctx); err != nil {
		return nil, err
	}
	s.initHead()
	s.initSideFiles()
	s.lookOutside(time.Now())
	s.wstmts, s.rstmts = newStmtCache(s.wconn), newStmtCache(s.rdb)
	s.r = readDB{s.rstmts}
	s.ops = make(chan *writeOp, s.maxOps)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.runWriter()
	// A store opened over a large tenant sums its Summary in the
	// background from the start (totals.go), so the first status read
	// after a restart does not wait for it.
	s.tot.mu.Lock()
	s.tot.prime = true
	s.runRefresher()
	s.tot.mu.Unlock()
	if err := s.resumeSeeks(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	if err := s.dropUnfinishedSnapshots(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// Close stops the writer after it has committed every write already
// submitted, then closes the database. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	s.cancel()
	<-s.stopped
	s.tot.mu.Lock()
	refresher := s.tot.done
	s.tot.mu.Unlock()
	if refresher != nil {
		<-refresher
	}
	if !s.replaced.Load() && s.sideCut() {
		// A checkpoint now would copy a cut WAL into the file (sidecut.go).
		s.noteReplaced()
	}
	if s.replaced.Load() {
		// The connections stay open until the process exits (replaced.go).
		s.log.Info("closing: the database file was replaced; its connections are left to the process's exit", "path", s.path)
		return s.closeDisk()
	}
	var errs []error
	s.checkpointOnClose()
	s.wstmts.close()
	s.rstmts.close()
	errs = append(errs, s.wconn.Close(), s.rdb.Close(), s.wdb.Close(), s.closeSides(), s.closeDisk())
	// Unlocked last, once nothing of this process touches the file.
	errs = append(errs, s.lock.release())
	return errors.Join(errs...)
}

// checkpointOnClose copies the WAL into the database file and truncates it,
// if it can do so without waiting. Another process reading the file
// (sqlite3, litestream, a backup) may hold a snapshot for as long as it
// likes, and a stop must not wait for it: a container runtime kills what
// has not stopped in its grace period. What is not copied stays in the
// WAL, durable, and the next open reads it. On a full disk the checkpoint
// cannot grow the database file either; the commits stay in the WAL just
// the same. Neither is a failure of Close.
func (s *Store) checkpointOnClose() {
	ctx := context.Background()
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		s.log.Warn("closing: the WAL is left for the next start", "err", err)
		return
	}
	// A checkpoint that meets a reader copies what it can and answers
	// busy = 1 instead of an error.
	var busy, walFrames, copied int64
	err := s.wconn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &walFrames, &copied)
	switch {
	case err != nil && isFull(err):
		s.log.Warn("closing: the WAL is left for the next start: the disk is full", "err", err)
	case err != nil:
		s.log.Warn("closing: the WAL is left for the next start", "err", err)
	case busy != 0:
		s.log.Info("closing: the WAL is left for the next start: another process is reading the database",
			"walFrames", walFrames, "copied", copied)
	}
}

// capSize sets SQLite's page cap on the writer's connection, so that a
// write past maxBytes fails like one on a full disk.
func (s *Store) capSize(ctx context.Context, maxBytes int64) error {
	var pageSize int64
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return fmt.Errorf("read page_size: %w", err)
	}
	pages := max(maxBytes/pageSize, 1)
	// SQLite never sets the cap below the pages already in use.
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		return fmt.Errorf("set max_page_count: %w", err)
	}
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// Health is Ping, and whether the server is fit to serve the file: not
// once its path names another file (combtype.ErrReplaced), nor once a
// statement has met a damaged page (combtype.ErrDamaged), nor while its
// commits fail because the file cannot be written (combtype.ErrUnwritable).
// A damaged page
// answers only the statements that read it, and the file stays damaged
// until it is restored, so once one has met it the server is not
// healthy, whatever else still answers.
func (s *Store) Health(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	if s.replaced.Load() {
		return fmt.Errorf("health: %w: %s", combtype.ErrReplaced, s.path)
	}
	if n := s.stats.Damaged.Load(); n > 0 {
		return fmt.Errorf("health: %w: %d statements met a damaged page since the server started", combtype.ErrDamaged, n)
	}
	if s.unwritable.Load() {
		return fmt.Errorf("health: %w: the last commit failed: %s", combtype.ErrUnwritable, s.path)
	}
	return nil
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.clock.Now() }

// Stats returns the writer's counters.
func (s *Store) Stats() *Stats { return &s.stats }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// ReadDB exposes the reader pool to packages that compute read-only views
// (lag, listings). It is query_only: a write through it fails.
func (s *Store) ReadDB() *sql.DB { return s.rdb }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// maxMicros bounds every time the store computes, about 292,000 years after
// the epoch: time arithmetic saturates there instead of wrapping around.
const maxMicros = math.MaxInt64 / 2

// secondsMicros is s seconds in microseconds, saturating.
func secondsMicros(s int64) int64 {
	if s > maxMicros/1_000_000 {
		return maxMicros
	}
	if s < -maxMicros/1_000_000 {
		return -maxMicros
	}
	return s * 1e6
}

// addMicros is a+b, saturating at ±maxMicros.
func addMicros(a, b int64) int64 {
	sum := a + b
	switch {
	case b > 0 && sum < a, sum > maxMicros:
		return maxMicros
	case b < 0 && sum > a, sum < -maxMicros:
		return -maxMicros
	}
	return sum
}
