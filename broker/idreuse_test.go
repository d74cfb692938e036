package broker_test

import (
	"context"
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
