package combtype

import (
	"time"
)

// DefaultSnapshotTTL is how long a snapshot lives when its creator names no expiry.
const DefaultSnapshotTTL = 7 * 24 * time.Hour

// Snapshot is a consumer group's committed offsets on one queue, captured
// under a name.
type Snapshot struct {
	Name      string            // unique among the tenant's live snapshots
	Group     string            // the group whose cursors it captured
	Queue     string            // the queue they are on
	QueueUUID string            // that queue's uuid when it was taken
	Labels    map[string]string // the caller's, for finding it again
	CreatedAt time.Time         // by the broker's clock
	ExpiresAt time.Time         // after it, the snapshot is gone (ErrSnapshotNotFound)
	// Cursors is one page of the captured positions, one per partition
	// that existed when it was taken, in the partitions' creation order:
	// the first DefaultPageLimit of them from Broker.SnapshotCreate,
	// SnapshotGet and SnapshotUpdate, the page asked for from
	// Broker.SnapshotCursorPage, so a snapshot of a million partitions
	// is never held in memory whole.
	Cursors []SnapshotCursor
	// CursorsNext is where the page after Cursors starts (Page.After of
	// the next SnapshotCursorPage); "" when Cursors holds the last ones.
	CursorsNext string
}

// SnapshotCursor is one captured position.
type SnapshotCursor struct {
	Partition   string // the partition's name
	PartitionID string // uuid
	// Committed is the group's committed offset there when the snapshot
	// was taken (where its subscription implied one, for a partition it
	// had no cursor on): a seek to the snapshot resumes delivery at
	// Committed+1, or at the log start if retention has passed it.
	Committed int64
}

// CreateSnapshotRequest names a snapshot of Group's cursors on Queue.
type CreateSnapshotRequest struct {
	Name   string            // required; at most 255 characters
	Group  string            // "" = QueueModeGroup
	Queue  string            // unknown is ErrSnapshotConflict
	Labels map[string]string // stored as given; nil = none
	// ExpiresAt, when not zero, is the expiry; it must be in the future.
	ExpiresAt time.Time
	// TTL, when ExpiresAt is zero, is the lifetime from now. Both zero
	// means DefaultSnapshotTTL.
	TTL time.Duration
}

// SnapshotUpdate is what an update may change; the rest of a snapshot is
// fixed when it is taken.
type SnapshotUpdate struct {
	// SetLabels replaces the labels with Labels.
	SetLabels bool
	Labels    map[string]string // the new labels, with SetLabels; nil clears them
	// ExpiresAt, when not nil, is the new expiry; it must be in the future.
	ExpiresAt *time.Time
}

// SnapshotFilter selects live snapshots; empty fields match every one.
type SnapshotFilter struct {
	Group string // the group captured; "" = any
	Queue string // the queue's name; "" = any
}
