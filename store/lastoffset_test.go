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
