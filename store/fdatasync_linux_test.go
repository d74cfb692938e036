package store_test

import (
	"context"
	"testing"

	"modernc.org/sqlite"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// On Linux a store's commits sync with fdatasync, as SQLite's own Linux
// builds do, not with the transpiled library's default fsync.
func TestCommitsSyncWithFdatasyncOnLinux(t *testing.T) {
	if _, err := sqlite.Fdatasync(false); err != nil {
		t.Fatalf("reset the sync call: %v", err)
	}
	st := combtest.MustOpenStore(t, combtest.Options{})
	if _, err := st.Push(context.Background(), "", []combtype.PushItem{{Queue: "q", Payload: []byte(`{"n":1}`)}}); err != nil {
		t.Fatalf("push: %v", err)
	}
	if !sqlite.FdatasyncEnabled() {
		t.Fatal("commits sync with fsync, want fdatasync")
	}
}
