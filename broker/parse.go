package broker

import (
	"fmt"
	"time"

	"github.com/comb-broker/comb/seek"
	"github.com/comb-broker/comb/store"
)

// ParseTime reads a client-supplied time (RFC 3339, with or without
// fractional seconds or offset, or a bare date). A time without an offset
// is UTC.
func ParseTime(s string) (time.Time, bool) { return seek.ParseTime(s) }

// ParseEncryptionKey decodes Options.EncryptionKey given as 64 hex
// characters, the form QUEEN_ENCRYPTION_KEY takes. An empty string is no
// key; anything else is an error wrapping combtype.ErrInvalid.
func ParseEncryptionKey(s string) ([]byte, error) {
	key, err := store.ParseEncryptionKey(s)
	if err != nil {
		return nil, fmt.Errorf("parse encryption key: %w", err)
	}
	return key, nil
}
