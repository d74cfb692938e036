package store

import "errors"

// Sentinel errors. httpd maps them to status codes in one place.
var (
	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("store closed")
	// ErrCorrupt is returned when a segment fails its checksum or does not decode.
	ErrCorrupt = errors.New("segment corrupt")
	// ErrQueueNotFound is returned when a named queue does not exist for the tenant.
	ErrQueueNotFound = errors.New("queue not found")
	// ErrPartitionNotFound is returned when a named partition does not exist.
	ErrPartitionNotFound = errors.New("partition not found")
	// ErrMessageNotFound is returned when (partition, transactionId) names nothing.
	ErrMessageNotFound = errors.New("message not found")
	// ErrInvalid wraps a request the store refuses before writing anything.
	ErrInvalid = errors.New("invalid request")
)

// Errors about the database file and its space.
var (
	// ErrFull is returned when a write finds the disk, or the size cap set
	// by Options.MaxDBBytes, full. Nothing of that write was stored.
	ErrFull = errors.New("database or disk is full")
	// ErrNotComb is returned when a file is not a comb database.
	ErrNotComb = errors.New("not a comb database")
	// ErrSchemaTooNew is returned when a database was written by a newer comb.
	ErrSchemaTooNew = errors.New("database schema is newer than this comb")
	// ErrLocked is returned when another process has the database open.
	ErrLocked = errors.New("database is in use by another comb process")
	// ErrStale is returned when a file is served by a running comb whose
	// WAL was removed from the directory under it: the file does not hold
	// that server's recent writes.
	ErrStale = errors.New("database file is stale")
)
