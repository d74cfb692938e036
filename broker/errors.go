package broker

import (
	"github.com/comb-broker/comb/seek"
	"github.com/comb-broker/comb/store"
)

// The errors a caller tests for with errors.Is. They are the engine's own
// values, so errors.Is holds whichever layer returned them.
var (
	// ErrClosed is returned by every call made after Close.
	ErrClosed = store.ErrClosed
	// ErrCorrupt is a segment that failed its checksum or did not decode.
	ErrCorrupt = store.ErrCorrupt
	// ErrQueueNotFound is a named queue that does not exist for the tenant.
	ErrQueueNotFound = store.ErrQueueNotFound
	// ErrPartitionNotFound is a named partition that does not exist.
	ErrPartitionNotFound = store.ErrPartitionNotFound
	// ErrMessageNotFound is a (partition, transactionId) that names nothing.
	ErrMessageNotFound = store.ErrMessageNotFound
	// ErrInvalid wraps a request refused before anything was written; its
	// text after "invalid request: " is meant for the client.
	ErrInvalid = store.ErrInvalid
	// ErrNoEncryptionKey is an encrypted payload read without its key.
	ErrNoEncryptionKey = store.ErrNoEncryptionKey

	// ErrSnapshotNotFound is an unknown or expired snapshot.
	ErrSnapshotNotFound = store.ErrSnapshotNotFound
	// ErrSnapshotExists is a snapshot created under a live name.
	ErrSnapshotExists = store.ErrSnapshotExists
	// ErrSnapshotConflict is a snapshot that cannot be taken in the current
	// state (its queue does not exist).
	ErrSnapshotConflict = store.ErrSnapshotConflict

	// ErrNoTarget is a seek that names no position.
	ErrNoTarget = seek.ErrNoTarget
	// ErrManyTargets is a seek that names more than one position.
	ErrManyTargets = seek.ErrManyTargets
)
