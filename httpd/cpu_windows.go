//go:build windows

package httpd

import "syscall"

// cpuMicros is the process's user and system CPU time in microseconds, as
// Node's process.cpuUsage() reports it. Windows counts in 100 ns ticks.
func cpuMicros() (user, system int64) {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, 0
	}
	var created, exited, kernel, usr syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &usr); err != nil {
		return 0, 0
	}
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return ticks(usr) / 10, ticks(kernel) / 10
}
