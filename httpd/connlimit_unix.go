//go:build unix

package httpd

import "syscall"

// openFileLimit is how many descriptors the process may have open (Go
// raises its soft limit to the hard one as it starts).
func openFileLimit() (int64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<40 {
		return 0, false
	}
	return int64(l.Cur), true
}
