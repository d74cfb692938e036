//go:build windows

package httpd

import (
	"errors"

	"golang.org/x/sys/windows"
)

// isStaleSocketErr reports whether dialing a socket file failed because no
// server listens on it: Windows answers WSAECONNREFUSED, or, for a file
// whose server has gone, sometimes WSAEINVAL.
func isStaleSocketErr(err error) bool {
	return errors.Is(err, windows.WSAECONNREFUSED) || errors.Is(err, windows.WSAEINVAL)
}
