//go:build unix

package main

import "syscall"

// selfCPUSeconds is the user+system CPU time this process has used so far,
// so a row can say what driving comb cost the client; ok is false when the
// system does not report it.
func selfCPUSeconds() (seconds float64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, true
}
