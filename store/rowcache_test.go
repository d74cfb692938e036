package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// The writer keeps the queue and partition rows pushes look up from one
// commit to the next. Whatever changes those rows between two pushes must
// reach the second: new options, a queue deleted and created again.
func TestPushesSeeQueueChangesMadeBetweenThem(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	st := openAt(t, path, testKey)
	configureQueue(t, st, "q", false, 3)
	pushPayloads(t, st, "q", `"OPEN-1"`)
	configureQueue(t, st, "q", true, 3)
	pushPayloads(t, st, "q", `"SEALED-2"`)

	push := func(queue string) combtype.PushResult {
		t.Helper()
		res, err := st.Push(ctx, "", []combtype.PushItem{{Queue: queue, Partition: "p", Payload: []byte(`1`)}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	first := []combtype.PushResult{push("d"), push("d"), push("d")}
	if first[2].Offset != 2 {
		t.Fatalf("third push at offset %d, want 2", first[2].Offset)
	}
	if existed, err := st.DeleteQueue(ctx, "", "d"); err != nil || !existed {
		t.Fatalf("delete: %v, %v", existed, err)
	}
	again := push("d")
	if again.Offset != 0 || again.PartitionID == first[0].PartitionID {
		t.Fatalf("after the queue was deleted, a push went to offset %d of partition %s (was %s), want offset 0 of a new one",
			again.Offset, again.PartitionID, first[0].PartitionID)
	}
	if next := push("d"); next.Offset != 1 || next.PartitionID != again.PartitionID {
		t.Fatalf("next push = offset %d of %s, want 1 of %s", next.Offset, next.PartitionID, again.PartitionID)
	}
	closeStore(t, st)
	if fileContains(t, path, "SEALED-2") {
		t.Fatal("a push after its queue was configured encrypted was stored in clear")
	}
	if !fileContains(t, path, "OPEN-1") {
		t.Fatal("control: the payload pushed before encryption is not found in the file, so the scan proves nothing")
	}
}
