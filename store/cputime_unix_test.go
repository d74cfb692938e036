//go:build unix

package store_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system. A
// rate per CPU second holds up on a machine other work is loading, where
// wall-clock rates do not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
