//go:build !linux

package store

// readBytes cannot tell the bytes read on this platform.
func readBytes() (int64, bool) { return 0, false }
