package store

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkSideCut is what the writer pays, twice a commit, to find a cut
// -wal or -shm (sidecut.go), beside a stat of the path (pathReplaced) as
// the baseline the check already paid.
func BenchmarkSideCut(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "comb.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := pushID(ctx, s, "one"); err != nil {
		b.Fatal(err)
	}
	b.Run("pathReplaced", func(b *testing.B) {
		for b.Loop() {
			if s.pathReplaced() {
				b.Fatal("replaced")
			}
		}
	})
	b.Run("sideCut", func(b *testing.B) {
		for b.Loop() {
			if wal, shm, _, err := cutNow(s.side.walF, s.side.shmF, 0, &walIndexSeen{}); err != nil || wal || shm {
				b.Fatal(wal, shm, err)
			}
		}
	})
}
