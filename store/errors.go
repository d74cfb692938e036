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
