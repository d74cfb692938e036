package combtype

import (
	"time"
)

// Defaults for the quarantine listing.
const (
	// DefaultQuarantineLimit is the page size of a quarantine listing
	// that names none.
	DefaultQuarantineLimit = 100
	// MaxQuarantineLimit caps one page of the quarantine listing.
	MaxQuarantineLimit = 1000
)

// QuarantineFilter selects quarantined segments of one tenant. Empty
// strings match everything.
type QuarantineFilter struct {
	Queue     string // the queue's exact name
	Partition string // partition name
	Limit     int    // <= 0 means DefaultQuarantineLimit; capped at MaxQuarantineLimit
	Offset    int    // matching segments skipped first; negative is 0
}

// QuarantinedSegment is a segment that failed its checksum or did not
// decode when a claim met it, put aside with a copy of its bytes.
type QuarantinedSegment struct {
	ID          int64  // what RestoreQuarantined names; never reused
	Tenant      string // "" is the default tenant
	Queue       string // the queue's name
	Partition   string // the partition's name
	PartitionID string // the partition's uuid
	// FirstOffset and LastOffset bound the frames the segment held: the
	// groups that met it moved past them without receiving them.
	FirstOffset, LastOffset int64
	Frames                  int64     // messages the segment held: LastOffset-FirstOffset+1
	Reason                  string    // the checksum or decode error met
	Bytes                   int64     // size of the stored copy
	SegmentCreatedAt        time.Time // commit time of the segment
	QuarantinedAt           time.Time // when a claim put it aside, by the broker's clock
	// PassedBy are the groups whose cursor on the partition is at or past
	// the segment's last offset. Which group met the segment is not
	// recorded, so a group that read the frames before they were damaged
	// is listed too; any group not listed will still meet the segment and
	// move past it.
	PassedBy []string
}

// RestoreResult is what RestoreQuarantined did.
type RestoreResult struct {
	ID     int64    // the quarantined segment's ID
	Queue  string   // its queue's name
	Frames int      // messages the segment held
	Groups []string // groups past it, one DLQ row per message each
	// DeadLettered is the number of DLQ rows written: Frames × len(Groups).
	DeadLettered int
}
