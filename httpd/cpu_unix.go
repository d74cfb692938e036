//go:build unix

package httpd

import "syscall"

// cpuMicros is the process's user and system CPU time in microseconds, as
// Node's process.cpuUsage() reports it.
func cpuMicros() (user, system int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return int64(ru.Utime.Sec)*1e6 + int64(ru.Utime.Usec), int64(ru.Stime.Sec)*1e6 + int64(ru.Stime.Usec)
}
