package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A queue or partition row deleted by hand with sqlite3 (the newest, so
// SQLite would give its id to the next row) leaves the rows that named it
// (partitions, segments, cursors; the schema has no foreign keys) to no
// one: the next queue did not take over the deleted queue's partitions
// and messages, and the next partition's pushes did not meet the deleted
// one's segments (before, UNIQUE constraint failed: 500 on every push to
// it), whether created by the server that was running or after a restart.
func TestARowDeletedByHandDoesNotLendItsIDToTheNextOne(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := map[bool]string{false: "serving", true: "restarted"}[restart]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "comb.db")
			b := combtest.OpenBrokerAt(t, path, combtest.Options{})
			push := func(queue, partition, txn string) {
				t.Helper()
				if _, err := b.Push(ctx, []combtype.PushItem{{Queue: queue, Partition: partition, TxnID: txn, Payload: []byte(`"` + txn + `"`)}}); err != nil {
					t.Fatalf("push %s to %s/%s: %v", txn, queue, partition, err)
				}
			}
			push("a", "p1", "a-1")
			push("a", "p2", "a-2")
			push("b", "p1", "b-1")
			combtest.SQLite3Exec(t, path, `DELETE FROM queues WHERE name = 'b'`)
			combtest.SQLite3Exec(t, path, `DELETE FROM partitions WHERE id = (SELECT MAX(id) FROM partitions)`)
			if restart {
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				b = combtest.OpenBrokerAt(t, path, combtest.Options{})
			}
			defer b.Close()
			push("c", "p1", "c-1")
			push("c", "p2", "c-2")
			res, err := b.Pop(ctx, combtype.PopRequest{Queue: "c", Batch: 10, Partitions: 10, AutoAck: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Messages {
				got = append(got, m.TxnID)
			}
			if len(got) != 2 || got[0] == "b-1" || got[1] == "b-1" {
				t.Errorf("queue c delivered %v, want its own c-1 and c-2", got)
			}
		})
	}
}

// A queue row another program deletes while the server runs does not
// swallow the pushes after it: the writer sees the other program's commit
// and reads its rows again, so the next push makes the queue anew and its
// messages are delivered. Before, every later push was answered and
// written under the deleted queue's id, where no pop could reach it.
func TestPushesAfterAQueueRowIsDeletedByHandAreDelivered(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	defer b.Close()
	var want []string
	push := func(txn string) {
		t.Helper()
		if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", TxnID: txn, Payload: []byte(`"` + txn + `"`)}}); err != nil {
			t.Fatalf("push %s: %v", txn, err)
		}
		want = append(want, txn)
	}
	push("before")
	// The server's own work is not another program's: a pop and its
	// ack, a backup, a retention sweep.
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Group: "g", Batch: 10})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop = %+v, %v", res, err)
	}
	if _, err := b.Ack(ctx, []combtype.AckItem{{TxnID: res.Messages[0].TxnID, PartitionID: res.Messages[0].PartitionID,
		LeaseID: res.LeaseID, Status: combtype.AckCompleted, Group: "g"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.DatabaseBackup(ctx, filepath.Join(t.TempDir(), "backup.db")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RetentionSweep(ctx); err != nil {
		t.Fatal(err)
	}
	push("before-2")
	if n := b.EngineStats().OutsideCommits; n != 0 {
		t.Fatalf("the server's own work was taken for another program's commits %d times", n)
	}
	combtest.SQLite3Exec(t, path, `DELETE FROM queues WHERE name = 'q'`)
	want = want[:0] // what the other program deleted is gone
	for _, txn := range []string{"after-1", "after-2", "after-3"} {
		push(txn)
	}
	res, err = b.Pop(ctx, combtype.PopRequest{Queue: "q", Batch: 10, AutoAck: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Messages {
		got = append(got, m.TxnID)
	}
	if n := b.EngineStats().OutsideCommits; n != 1 {
		t.Errorf("the other program's commit was seen %d times, want 1", n)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a pop after the queue row was deleted got %v, want the pushes answered since: %v", got, want)
	}
}

// A backup restored with sqlite3 into the file the server runs on leaves
// no gap: the writer goes on from the restored offsets, not from those it
// remembered, so the log stays whole (before: "gap: no segment holds
// these offsets" for every offset written between the backup and the
// restore).
func TestABackupRestoredIntoTheServedFileLeavesNoGap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	push := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", TxnID: fmt.Sprintf("m%d", i), Payload: []byte("1")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	push(0, 5)
	combtest.SQLite3Exec(t, path, ".backup "+filepath.Join(dir, "backup.db"))
	push(5, 10)
	combtest.SQLite3Exec(t, path, ".restore "+filepath.Join(dir, "backup.db"))
	push(10, 15)
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Batch: 100, AutoAck: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Messages {
		got = append(got, m.TxnID)
	}
	want := "[m0 m1 m2 m3 m4 m10 m11 m12 m13 m14]"
	if fmt.Sprint(got) != want {
		t.Errorf("after the restore a pop got %v, want %s: the backup's and those pushed after the restore", got, want)
	}
	combtest.CloseBroker(t, b) // checks the file: no gap
}
