package combtype

import (
	"math"
	"time"
)

// DefaultPartition is the partition a push goes to when it names none.
const DefaultPartition = "Default"

// QueueOptions are a queue's settings as /api/v1/configure carries them.
// Durations are in seconds except RetryDelay (milliseconds). Every value
// lies in the range broker.ValidateOptions checks (docs/limits.md);
// retention works a whole segment (one push's items for a partition) at a
// time, in the sweeps of the broker's Options.RetentionInterval.
type QueueOptions struct {
	LeaseTime          int64 // seconds a popped batch stays leased; 0 is read as 60
	RetryLimit         int64 // failed acks redelivered before the next dead-letters: 0 dead-letters on the first
	RetryDelay         int64 // milliseconds; stored and echoed only
	MaxSize            int64 // stored and echoed only, as Queen does
	TTL                int64 // seconds; stored and echoed only
	DeadLetterQueue    bool  // stored and echoed only
	DLQAfterMaxRetries bool  // stored and echoed only
	Priority           int64 // orders queues in namespace pops, highest first
	DelayedProcessing  int64 // seconds a message stays hidden after its commit
	WindowBuffer       int64 // seconds a partition is held after its newest commit
	// RetentionSeconds: with RetentionEnabled, segments committed longer
	// ago are deleted, consumed or not. 0 = no such rule.
	RetentionSeconds int64
	// CompletedRetentionSeconds: with RetentionEnabled, segments
	// committed longer ago are deleted once every group consumed them.
	// 0 = no such rule.
	CompletedRetentionSeconds int64
	// RetentionEnabled turns on RetentionSeconds and
	// CompletedRetentionSeconds; MaxWaitTimeSeconds and MaxBytes apply
	// without it.
	RetentionEnabled bool
	// EncryptionEnabled seals the payloads pushed from now on with the
	// broker's Options.EncryptionKey (AES-256-GCM); without a key they
	// are stored in clear, and the broker logs a warning at Open.
	EncryptionEnabled bool
	// MaxWaitTimeSeconds: segments committed longer ago are deleted,
	// consumed or not, with or without RetentionEnabled. 0 = no such rule.
	MaxWaitTimeSeconds int64
	// MaxBytes bounds the queue's stored segment bytes (compressed,
	// sealed); past it retention deletes the oldest segments. 0 = none.
	MaxBytes int64
}

// Queue is a queue row.
type Queue struct {
	ID        int64        // row id, stable for the life of the database
	UUID      string       // a new one when a queue of the name is deleted and created again
	Tenant    string       // the tenant it belongs to; "" is the default tenant
	Name      string       // unique within the tenant; at most 255 characters
	Namespace string       // groups queues for namespace pops and stats; "" = none
	Task      string       // groups queues for task pops and stats; "" = none
	Options   QueueOptions // as the last configure (or the first push) set them
	CreatedAt time.Time    // by the broker's clock, when the queue was first created
}

// Partition is a partition row.
type Partition struct {
	ID            int64     // row id, stable for the life of the database
	UUID          string    // the id messages and acks name it by
	QueueID       int64     // its queue's ID
	Name          string    // unique within the queue; DefaultPartition unless a push named one
	LastOffset    int64     // highest offset written; -1 while empty
	LogStart      int64     // first offset retention still keeps
	LastSegmentAt int64     // commit time of the newest segment, µs since the epoch; 0 when none
	CreatedAt     time.Time // by the broker's clock, when its first push or configure created it
}

// ConfigureRequest is an upsert of a queue with a full replace of its options.
type ConfigureRequest struct {
	Queue     string // the queue's name, required
	Namespace string // replaces the queue's namespace; "" = none
	Task      string // replaces the queue's task; "" = none
	// Options replace all of the queue's options: a zero field is stored
	// as zero. Start from DefaultQueueOptions to change only some.
	Options QueueOptions
}

// LeaseDuration is how long a pop of this queue leases its batch.
func (q *Queue) LeaseDuration() time.Duration {
	if q.Options.LeaseTime <= 0 {
		return 60 * time.Second
	}
	// Saturates rather than wrapping into a lease born expired.
	return time.Duration(min(q.Options.LeaseTime, math.MaxInt64/int64(time.Second))) * time.Second
}

// DefaultQueueOptions are the options of a queue created by a push, and what
// /configure falls back to for every option it omits: LeaseTime 300,
// RetryLimit 3, RetryDelay 1000, TTL 3600, every other option zero (no
// retention, no encryption).
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600}
}
