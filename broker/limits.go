package broker

import (
	"fmt"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Ranges of every numeric queue option and request parameter, checked
// where they enter so that no later multiplication into microseconds or
// nanoseconds can wrap around. docs/limits.md lists them.
const (
	// MaxDurationSeconds bounds the retention and TTL options: ten years.
	MaxDurationSeconds = 10 * 365 * 24 * 3600
	// MaxLeaseSeconds bounds leaseTime, delayedProcessing, windowBuffer
	// and a lease extension: one year.
	MaxLeaseSeconds = 365 * 24 * 3600
	// MaxRetryLimit bounds retryLimit.
	MaxRetryLimit = 1_000_000
	// MaxRetryDelayMillis bounds retryDelay: a day.
	MaxRetryDelayMillis = 24 * 3600 * 1000
	// MaxPriority bounds priority.
	MaxPriority = 1_000_000
	// MaxSizeValue bounds maxSize and maxBytes: 2^53, the largest integer
	// every JSON client reads exactly.
	MaxSizeValue = 1 << 53
	// MaxPopTimeout bounds a long-poll pop's timeout: an hour.
	MaxPopTimeout = time.Hour
)

// RangeError is a numeric option or parameter outside its documented
// range; nothing was written.
type RangeError struct {
	Name     string // as the client spells it, e.g. "options.leaseTime"
	Value    int64
	Min, Max int64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s must be between %d and %d (got %d)", e.Name, e.Min, e.Max, e.Value)
}

// Unwrap makes a RangeError match both combtype.ErrOutOfRange and
// combtype.ErrInvalid.
func (e *RangeError) Unwrap() []error { return []error{combtype.ErrOutOfRange, combtype.ErrInvalid} }

// CheckRange returns a *RangeError when v is outside [lo, hi].
func CheckRange(name string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return &RangeError{Name: name, Value: v, Min: lo, Max: hi}
	}
	return nil
}

// ValidateOptions checks every numeric queue option against its range.
func ValidateOptions(o combtype.QueueOptions) error {
	for _, c := range []struct {
		name   string
		v, max int64
	}{
		{"leaseTime", o.LeaseTime, MaxLeaseSeconds},
		{"retryLimit", o.RetryLimit, MaxRetryLimit},
		{"retryDelay", o.RetryDelay, MaxRetryDelayMillis},
		{"maxSize", o.MaxSize, MaxSizeValue},
		{"ttl", o.TTL, MaxDurationSeconds},
		{"priority", o.Priority, MaxPriority},
		{"delayedProcessing", o.DelayedProcessing, MaxLeaseSeconds},
		{"windowBuffer", o.WindowBuffer, MaxLeaseSeconds},
		{"retentionSeconds", o.RetentionSeconds, MaxDurationSeconds},
		{"completedRetentionSeconds", o.CompletedRetentionSeconds, MaxDurationSeconds},
		{"maxWaitTimeSeconds", o.MaxWaitTimeSeconds, MaxDurationSeconds},
		{"maxBytes", o.MaxBytes, MaxSizeValue},
	} {
		if err := CheckRange("options."+c.name, c.v, 0, c.max); err != nil {
			return err
		}
	}
	return nil
}

// CheckLeaseExtension checks a lease extension of seconds.
func CheckLeaseExtension(seconds int64) error {
	return CheckRange("seconds", seconds, 1, MaxLeaseSeconds)
}

// CheckPopTimeout checks a pop's long-poll timeout in milliseconds.
func CheckPopTimeout(millis int64) error {
	return CheckRange("timeout", millis, 0, MaxPopTimeout.Milliseconds())
}
