//go:build !windows

package httpd

// isStaleSocketErr reports whether dialing a socket file failed because no
// server listens on it; on Unix that is ECONNREFUSED, checked by the caller.
func isStaleSocketErr(error) bool { return false }
