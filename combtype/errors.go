package combtype

import "errors"

// The errors a caller tests for with errors.Is, grouped by what returns
// them. A returned error wraps one of them with its context; HTTP maps
// each to its status and reply in one place (httpd's errorStatus).
var (
	// Any call.

	// ErrClosed is returned by every call made after the broker closed.
	ErrClosed = errors.New("broker closed")
	// ErrInvalid is wrapped by every refusal of a request before anything
	// was written: a missing or malformed field, an option out of range
	// (see ErrOutOfRange), a seek target outside the retained range. The
	// text after "invalid request: " is meant for the client.
	ErrInvalid = errors.New("invalid request")
	// ErrOutOfRange is wrapped, together with ErrInvalid, by a numeric
	// option or parameter outside its documented range.
	ErrOutOfRange = errors.New("value out of range")
	// ErrFull is returned by a write that found the disk, or
	// Options.MaxDBBytes, full. Nothing of it was stored; reads, and
	// writes that free space, keep working, and writes resume once space
	// returns.
	ErrFull = errors.New("database or disk is full")
	// ErrQueueLimit is returned by a write that would create a queue
	// (a push to a new queue, a configure, a stream's sink) while the
	// database already holds Options.MaxQueues queues. Nothing of it was
	// stored; writes to existing queues go on, and a queue delete makes
	// room at once.
	ErrQueueLimit = errors.New("queue limit reached")
	// ErrGroupLimit is returned by a write that would subscribe a
	// consumer group to a queue it has no subscription on (its first pop
	// there, or a seek that creates it) while the database already holds
	// Options.MaxGroups subscriptions. Nothing of it was stored; groups
	// already subscribed go on, and deleting a group or a queue makes
	// room at once.
	ErrGroupLimit = errors.New("consumer group limit reached")
	// ErrForwarderLimit is returned by the store of a new forwarder while
	// the database already holds Options.MaxForwarders of them. Nothing
	// was stored; a forwarder's delete makes room.
	ErrForwarderLimit = errors.New("forwarder limit reached")
	// ErrSnapshotLimit is returned by the create of a snapshot while the
	// database already holds Options.MaxSnapshots live ones. Nothing was
	// stored; a snapshot's delete or expiry makes room.
	ErrSnapshotLimit = errors.New("snapshot limit reached")
	// ErrStreamQueryLimit is returned by the registration of a new
	// streaming query while the database already holds
	// Options.MaxStreamQueries. Nothing was stored; the delete of the
	// queue a query reads makes room.
	ErrStreamQueryLimit = errors.New("streaming query limit reached")
	// ErrFileBusy is returned by a write that waited its busy timeout
	// (broker Options.BusyTimeout) for another program's write
	// transaction on the database file to end: a sqlite3 session or a DB
	// browser that began writing and has not committed. Nothing of it was
	// written and it may be sent again; writes resume when that
	// transaction ends.
	ErrFileBusy = errors.New("database file is locked by another program's write transaction")
	// ErrDamaged is returned by a read or write that met a damaged page of
	// the database file (SQLite: "database disk image is malformed", or a
	// header that is no longer a database's): a bad sector, a copy cut
	// short, another program writing into the file. Nothing of a write was
	// written. What does not read through the damage keeps working; comb
	// check names the damage, and the file needs a restore from a backup
	// (docs/operations.md).
	ErrDamaged = errors.New("database file is damaged")
	// ErrUnwritable is returned by a write the file system refused: a
	// file system mounted or remounted read-only, a file made immutable
	// or its permissions taken away while served, a disk error (SQLite:
	// SQLITE_READONLY, SQLITE_IOERR). Nothing of the write was written;
	// writes resume once the file can be written again.
	ErrUnwritable = errors.New("database file cannot be written")
	// ErrReplaced is returned by every write once the database file's
	// path no longer names the file the server opened, or the file was
	// overwritten: replaced (a backup moved over it), removed, or written
	// over in place (a backup copied onto it) while served, or once its
	// -wal or -shm was removed or cut short.
	// Nothing of the write was kept; the server writes nothing more and
	// serves the file at the path once restarted (docs/operations.md).
	ErrReplaced = errors.New("database file was replaced or removed while served")

	// Opening a database (Open, Check, BackupFile).

	// ErrNotComb is returned when the file is not a comb database; it was
	// left untouched.
	ErrNotComb = errors.New("not a comb database")
	// ErrSchemaTooNew is returned when the file was written by a newer
	// comb; it was left untouched.
	ErrSchemaTooNew = errors.New("database schema is newer than this comb")
	// ErrLocked is returned when another process (or another Open in this
	// one) has the file open.
	ErrLocked = errors.New("database is in use by another comb process")
	// ErrStale is returned by Check and BackupFile for a file served by a
	// running comb whose WAL was removed from the directory under it: the
	// file does not hold that server's recent writes.
	ErrStale = errors.New("database file is stale")

	// Pushes and transactions.

	// ErrBusy is returned by a push or transaction refused because too many
	// bytes of pushes are in flight; nothing of it was written and it may
	// be sent again shortly.
	ErrBusy = errors.New("too many bytes of pushes in flight, retry shortly")

	// Reads of queues, partitions and messages.

	// ErrQueueNotFound is returned when a named queue does not exist for
	// the tenant (for a seek: or has no partitions).
	ErrQueueNotFound = errors.New("queue not found")
	// ErrPartitionNotFound is returned when a named partition does not
	// exist.
	ErrPartitionNotFound = errors.New("partition not found")
	// ErrMessageNotFound is returned, or set in an AckResult, when a
	// (partition, transactionId) names no stored message.
	ErrMessageNotFound = errors.New("message not found")
	// ErrCorrupt is returned when a stored segment fails its checksum or
	// does not decode. A pop never returns it: it quarantines the segment
	// and moves on (see QuarantinedSegment).
	ErrCorrupt = errors.New("segment corrupt")
	// ErrNoEncryptionKey is returned when a stored payload is encrypted and
	// the broker was opened without its key.
	ErrNoEncryptionKey = errors.New("payload is encrypted and no matching encryption key is configured")

	// Acks, and a streaming cycle's ack (in CycleResult.Err).

	// ErrInvalidLease is set in an AckResult, or a CycleResult, whose lease
	// is unknown, expired or not the one holding the message.
	ErrInvalidLease = errors.New("invalid or expired lease")
	// ErrAlreadyAcked is set in a CycleResult whose ack is at or behind the
	// cursor: a replay of a committed cycle.
	ErrAlreadyAcked = errors.New("message already acknowledged")
	// ErrQueryNotFound is set in a CycleResult that names an unknown
	// streaming query.
	ErrQueryNotFound = errors.New("stream query not found")

	// Lease extensions (in LeaseExtension.Err).

	// ErrLeaseNotFound is set when no partition is held by the lease.
	ErrLeaseNotFound = errors.New("lease not found")
	// ErrLeaseExpired is set when every batch of the lease expired.
	ErrLeaseExpired = errors.New("lease already expired")

	// Seeks.

	// ErrNoTarget is returned by a seek whose target names no position.
	ErrNoTarget = errors.New("seek names no position")
	// ErrManyTargets is returned by a seek whose target names more than
	// one position.
	ErrManyTargets = errors.New("seek names more than one position")

	// Snapshots. A snapshot that expired but was not swept yet is reported
	// as not found everywhere.

	// ErrSnapshotNotFound is returned for an unknown or expired snapshot.
	ErrSnapshotNotFound = errors.New("snapshot not found")
	// ErrSnapshotExists is returned when a live snapshot already has the
	// name.
	ErrSnapshotExists = errors.New("snapshot already exists")
	// ErrSnapshotConflict is returned when a snapshot cannot be taken in
	// the current state (its queue does not exist).
	ErrSnapshotConflict = errors.New("snapshot conflict")

	// Forwarders.

	// ErrForwarderNotFound is returned for an unknown forwarder name.
	ErrForwarderNotFound = errors.New("forwarder not found")
	// ErrForwarderExists is returned when a forwarder already has the name.
	ErrForwarderExists = errors.New("forwarder already exists")

	// Quarantine restores.

	// ErrQuarantineNotFound is returned for an id that names no
	// quarantined segment of the tenant.
	ErrQuarantineNotFound = errors.New("quarantined segment not found")
	// ErrStillDamaged is returned when the stored copy of a quarantined
	// segment still fails its checksum, does not decode or cannot be
	// decrypted. Nothing was changed.
	ErrStillDamaged = errors.New("quarantined segment still cannot be read")
	// ErrNoGroupPast is returned when no group has moved past a quarantined
	// segment: nobody lost its messages yet, so there is nothing to
	// restore.
	ErrNoGroupPast = errors.New("no consumer group has moved past the segment")
)
