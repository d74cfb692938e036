package broker

import (
	"time"

	"github.com/comb-broker/comb/seek"
	"github.com/comb-broker/comb/store"
)

// Bounds and names callers share with the engine.
const (
	// MaxPopBatch bounds the messages of one pop; a client asking for more
	// gets this many and pops again.
	MaxPopBatch = store.MaxPopBatch
	// QueueModeGroup is the cursor every pop without a consumer group
	// shares; an ack naming no group acks on it.
	QueueModeGroup = store.QueueModeGroup
	// EncryptionKeySize is the length in bytes of Options.EncryptionKey.
	EncryptionKeySize = store.EncryptionKeySize
)

// DefaultQueueOptions are the options of a queue configured without any.
func DefaultQueueOptions() QueueOptions { return store.DefaultQueueOptions() }

// ParseTime reads a client-supplied time (RFC 3339, with or without
// fractional seconds or offset, or a bare date). A time without an offset
// is UTC.
func ParseTime(s string) (time.Time, bool) { return seek.ParseTime(s) }

// ParseEncryptionKey decodes Options.EncryptionKey given as 64 hex
// characters, the form QUEEN_ENCRYPTION_KEY takes. An empty string is no
// key; anything else is an error wrapping ErrInvalid.
func ParseEncryptionKey(s string) ([]byte, error) { return store.ParseEncryptionKey(s) }
