//go:build linux

package main

import (
	"context"
	"os"

	"github.com/comb-broker/comb/internal/gcpace"
)

// paceFloorGC paces a floor's collector with comb serve's own policy
// (internal/gcpace) until ctx ends, so the two differ in their work, not
// in their memory settings. It matters after the first wake: with Go's
// defaults no cycle ran between wakes of 10,000 through net/http, so each
// wake's replies ran into memory never touched before (7,800 and 3,100
// page faults in the second and third wakes, against 620 and 1,600 paced
// as comb, whose collection while the pops wait lets a wake reuse the
// last one's garbage). As in comb, GOGC and GOMEMLIMIT in the
// environment override it.
func paceFloorGC(ctx context.Context) {
	if ownsLimit, ownsPercent := gcpace.Tune(os.Getenv); ownsLimit {
		gcpace.Follow(ctx, ownsPercent)
	}
}
