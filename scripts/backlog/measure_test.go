//go:build unix

package main

import "testing"

func TestPhases(t *testing.T) {
	lines := []string{
		"backup: copy 0 B of 9.70 GiB (0%), 0s elapsed",
		"backup: copy 1.20 GiB of 9.70 GiB (12%), 70.1 MiB/s, ETA 2m1s, 17s elapsed",
		"backup: sync, 2m25s elapsed",
		"backup: check integrity 9.60 GiB of 9.70 GiB (99%), 164.1 MiB/s, ETA 1s, 3m27s elapsed",
		"backup: check segments 12204 of 62064 (20%) segments, 387/s, ETA 2m9s, 4m39s elapsed",
		"backup: check rows 3 of 12 (25%) checks, 1.5/s, ETA 6s, 6m50s elapsed",
		"backup: done in 6m51.02s",
	}
	got := phases(lines)
	want := "copy 2m25s, sync 1m2s, check integrity 1m12s, check segments 2m11s, check rows 1s"
	if got != want {
		t.Fatalf("phases:\n got %s\nwant %s", got, want)
	}
}
