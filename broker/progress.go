package broker

import (
	"context"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store"
)

// CheckProgress is Check telling fn how far it has come, phase by phase
// (integrity, segments, rows); fn is called from more than one goroutine,
// never after CheckProgress returns, and must return at once. What it
// finds is what Check finds.
func CheckProgress(ctx context.Context, path string, fn func(combtype.Progress)) (*combtype.CheckReport, error) {
	return store.CheckProgress(ctx, path, fn)
}

// BackupFileProgress is BackupFile telling fn how far the copy has come
// (phase "copy" in bytes, then "sync"), on the same terms as
// CheckProgress. The copy is the one BackupFile makes.
func BackupFileProgress(ctx context.Context, src, dst string, fn func(combtype.Progress)) error {
	return store.BackupFileProgress(ctx, src, dst, fn)
}
