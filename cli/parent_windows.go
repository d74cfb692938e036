//go:build windows

package cli

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// parentPoll is how long each wait on the parent's handle lasts before ctx
// is checked again, in milliseconds.
const parentPoll = 250

// watchParent waits on a handle to the parent process and reports true
// once it exits; false if ctx ended first or the parent cannot be opened
// (it is already gone, or another user's).
func watchParent(ctx context.Context) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(os.Getppid()))
	if err != nil {
		// No such process: the parent is already gone.
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	for ctx.Err() == nil {
		ev, err := windows.WaitForSingleObject(h, parentPoll)
		if err != nil {
			return false
		}
		if ev == windows.WAIT_OBJECT_0 {
			return true
		}
	}
	return false
}
