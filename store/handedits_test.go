package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A partition's last_offset set back by hand below a stored message made
// the next push write a segment at an offset one already held: every
// push to the partition answered 500 (UNIQUE segments.partition_id,
// base_offset), a queue delete 500. The edit is refused; set back past
// segments deleted first, it is allowed. comb's trigger dropped by hand
// is made again at the next start.
func TestLastOffsetSetBackByHandIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	st := openLogged(t, path, nil)
	pushN(t, st, "a", 2)
	pushN(t, st, "b", 2)
	sqlite3 := combtest.SQLite3(t)
	for _, v := range []string{"0", "-1", "2"} {
		out, err := exec.Command(sqlite3, path, "PRAGMA busy_timeout = 10000; UPDATE partitions SET last_offset = "+v).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "may not move back") {
			t.Errorf("last_offset set back to %s from 3: %v %s, want it refused", v, err, out)
		}
	}
	pushN(t, st, "c", 2)
	if msgs, _, err := st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 10}); err != nil || len(msgs) != 6 {
		t.Errorf("listing: %d messages, %v; want 6", len(msgs), err)
	}
	combtest.SQLite3Exec(t, path, `PRAGMA busy_timeout = 10000; DELETE FROM segments WHERE base_offset >= 4; DELETE FROM txids WHERE offset >= 4; UPDATE partitions SET last_offset = 3`)
	pushN(t, st, "d", 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	combtest.CheckInvariants(t, path)

	combtest.SQLite3Exec(t, path, `DROP TRIGGER partitions_last_offset_never_back`)
	var logs bytes.Buffer
	st = openLogged(t, path, slog.New(slog.NewTextHandler(&logs, nil)))
	defer st.Close()
	if !strings.Contains(logs.String(), "partitions_last_offset_never_back") {
		t.Errorf("open said nothing of the trigger it made again:\n%s", logs.String())
	}
	if out, err := exec.Command(sqlite3, path, "PRAGMA busy_timeout = 10000; UPDATE partitions SET last_offset = 0").CombinedOutput(); err == nil {
		t.Errorf("last_offset set back once the trigger was made again: %s", out)
	}
	if _, err := st.DeleteQueue(ctx, "", "q"); err != nil {
		t.Errorf("delete queue: %v", err)
	}
}

// A snapshot row deleted by hand left its cursors, and SQLite gave the
// next snapshot that row's id: the new snapshot failed (UNIQUE
// snapshot_cursors, 500), or, on other partitions, took the stale
// cursors in. A new snapshot holds only the cursors it captured.
func TestASnapshotRowDeletedByHandLendsNoCursorsToTheNext(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	st := openLogged(t, path, nil)
	defer st.Close()
	for _, q := range []string{"q", "r"} {
		if _, err := st.Push(ctx, "", []combtype.PushItem{{Queue: q, Partition: "p1", Payload: []byte(`1`)},
			{Queue: q, Partition: "p2", Payload: []byte(`2`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s1", Group: "g", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	combtest.SQLite3Exec(t, path, `PRAGMA busy_timeout = 10000; DELETE FROM snapshots`)
	for _, c := range []struct{ name, queue string }{{"s2", "r"}, {"s3", "q"}} {
		snap, err := st.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: c.name, Group: "g", Queue: c.queue})
		if err != nil {
			t.Fatalf("snapshot %s of %s after the last one's row was deleted: %v", c.name, c.queue, err)
		}
		if got, err := st.Snapshot(ctx, "", c.name); err != nil || len(got.Cursors) != 2 || len(snap.Cursors) != 2 {
			t.Errorf("snapshot %s of %s: %v, %v; want its queue's 2 partitions", c.name, c.queue, got, err)
		}
		combtest.SQLite3Exec(t, path, `PRAGMA busy_timeout = 10000; DELETE FROM snapshots`)
	}
}
