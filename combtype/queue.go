package combtype

import (
	"math"
	"time"
)

// DefaultPartition is the partition a push goes to when it names none.
const DefaultPartition = "Default"

// QueueOptions are a queue's settings as /api/v1/configure carries them.
// Durations are in seconds except RetryDelay (milliseconds).
type QueueOptions struct {
	LeaseTime                 int64 // seconds a popped batch stays leased; 0 is read as 60
	RetryLimit                int64 // failed rounds before a message is dead-lettered
	RetryDelay                int64 // milliseconds; stored and echoed only
	MaxSize                   int64 // stored and echoed only, as Queen does
	TTL                       int64 // seconds; stored and echoed only
	DeadLetterQueue           bool  // stored and echoed only
	DLQAfterMaxRetries        bool  // stored and echoed only
	Priority                  int64 // orders queues in namespace pops, highest first
	DelayedProcessing         int64 // seconds a message stays hidden after its commit
	WindowBuffer              int64 // seconds a partition is held after its newest commit
	RetentionSeconds          int64
	CompletedRetentionSeconds int64
	RetentionEnabled          bool
	EncryptionEnabled         bool
	MaxWaitTimeSeconds        int64
	MaxBytes                  int64 // bound on stored segment bytes; 0 = none
}

// Queue is a queue row.
type Queue struct {
	ID        int64  // row id, stable for the life of the database
	UUID      string // a new one when a queue of the name is deleted and created again
	Tenant    string
	Name      string
	Namespace string // groups queues for namespace pops and stats; "" = none
	Task      string // groups queues for task pops and stats; "" = none
	Options   QueueOptions
	CreatedAt time.Time
}

// Partition is a partition row.
type Partition struct {
	ID            int64  // row id, stable for the life of the database
	UUID          string // the id messages and acks name it by
	QueueID       int64  // its queue's ID
	Name          string
	LastOffset    int64 // highest offset written; -1 while empty
	LogStart      int64 // first offset retention still keeps
	LastSegmentAt int64 // commit time of the newest segment, µs since the epoch; 0 when none
	CreatedAt     time.Time
}

// ConfigureRequest is an upsert of a queue with a full replace of its options.
type ConfigureRequest struct {
	Queue     string
	Namespace string
	Task      string
	Options   QueueOptions
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
// /configure falls back to for every option it omits.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600}
}
