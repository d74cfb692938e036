//go:build !windows

package cli

import (
	"context"
	"os"
	"time"
)

// parentPoll is how often the parent is checked. A poll, not
// PR_SET_PDEATHSIG: that signal fires when the thread that started comb
// exits, not the process, and exists on Linux only.
const parentPoll = 250 * time.Millisecond

// watchParent waits until the parent process exits, which on Unix shows
// as getppid changing (comb is re-parented to init or a subreaper), and
// reports true; false if ctx ended first.
func watchParent(ctx context.Context) bool {
	parent := os.Getppid()
	if parent == 1 {
		// Already orphaned at start: there is no parent to follow.
		return false
	}
	t := time.NewTicker(parentPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			if os.Getppid() != parent {
				return true
			}
		}
	}
}
