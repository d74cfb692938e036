package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// Acks are located before they reach the writer. These tests commit, in
// that gap, the writes that take a located message away or store one, and
// check that the ack answers as it does when the write came first, which
// is what it answered when acks were located inside the writer.

// pushOne stores txn in queue's default partition, in a segment of its own,
// and returns the partition's uuid and id and the message's offset.
func pushOne(t *testing.T, s *Store, queue, txn string) (uuid string, id, offset int64) {
	t.Helper()
	res, err := s.Push(context.Background(), "", []combtype.PushItem{{Queue: queue, TxnID: txn, Payload: []byte(txn)}})
	if err != nil || res[0].Status != combtype.StatusQueued {
		t.Fatalf("push %s = %+v, %v", txn, res, err)
	}
	if err := s.rdb.QueryRow(`SELECT id FROM partitions WHERE uuid = ?`, res[0].PartitionID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return res[0].PartitionID, id, res[0].Offset
}

func committed(t *testing.T, s *Store, partitionID int64, group string) int64 {
	t.Helper()
	var c int64
	if err := s.rdb.QueryRow(`SELECT committed FROM cursors WHERE partition_id = ? AND group_name = ?`,
		partitionID, group).Scan(&c); err != nil {
		t.Fatalf("cursor of %s: %v", group, err)
	}
	return c
}

// between makes fn run once, after the next acks are located and before
// they are submitted.
func between(s *Store, fn func()) {
	s.afterLocate = func() {
		s.afterLocate = nil
		fn()
	}
}

func TestAnAckLocatedBeforeRetentionRemovedItsMessageIsNotFound(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	uuid, pid, _ := pushOne(t, s, "q", "a")
	pushOne(t, s, "q", "b")
	pushOne(t, s, "q", "c")
	evictBelow := func(upTo int64) func() {
		return func() {
			if res, err := s.EvictPrefix(ctx, pid, upTo, t0, EvictLimits{}); err != nil || res.Segments != 1 {
				t.Fatalf("evict below %d = %+v, %v", upTo, res, err)
			}
		}
	}

	items := []combtype.AckItem{{TxnID: "a", PartitionID: uuid}, {TxnID: "b", PartitionID: uuid}}
	between(s, evictBelow(1))
	raced, err := s.Ack(ctx, "", "g", items)
	if err != nil {
		t.Fatal(err)
	}
	if raced[0].Success || raced[0].Err != combtype.ErrMessageNotFound || !raced[1].Success {
		t.Fatalf("acks of a removed and a kept message = %+v", raced)
	}
	after, err := s.Ack(ctx, "", "g", items)
	if err != nil || !reflect.DeepEqual(raced, after) {
		t.Fatalf("the same acks after the removal = %+v, %v; raced = %+v", after, err, raced)
	}

	// A transaction whose ack lost its message fails whole.
	ops := []combtype.TxOp{{Type: "ack", Ack: combtype.AckItem{TxnID: "c", PartitionID: uuid}}, {Type: "ack", Ack: combtype.AckItem{TxnID: "b", PartitionID: uuid}}}
	between(s, evictBelow(2))
	_, err = s.Transaction(ctx, "", ops)
	var txErr *combtype.TxError
	if !errors.As(err, &txErr) || txErr.Op != "ack" || txErr.Err != combtype.ErrMessageNotFound {
		t.Fatalf("transaction acking a removed message = %v", err)
	}
	if _, again := s.Transaction(ctx, "", ops); again == nil || again.Error() != err.Error() {
		t.Fatalf("the same transaction after the removal = %v, raced = %v", again, err)
	}
	var cursors int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM cursors`).Scan(&cursors); err != nil || cursors != 0 {
		t.Fatalf("cursors after failed transactions = %d, %v", cursors, err)
	}
}

func TestAnAckLocatedBeforeItsMessageWasRemovedAndPushedAgainFindsTheNewOne(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	uuid, pid, first := pushOne(t, s, "q", "a")
	pushOne(t, s, "q", "b")
	var again int64
	between(s, func() {
		if _, err := s.EvictPrefix(ctx, pid, first+1, t0, EvictLimits{}); err != nil {
			t.Fatal(err)
		}
		_, _, again = pushOne(t, s, "q", "a")
	})
	// A transaction creates the cursor of its group where the ack leaves it.
	res, err := s.Transaction(ctx, "", []combtype.TxOp{{Type: "ack", Ack: combtype.AckItem{TxnID: "a", PartitionID: uuid, Group: "g"}}})
	if err != nil || !res[0].Ack.Success {
		t.Fatalf("transaction = %+v, %v", res, err)
	}
	if c := committed(t, s, pid, "g"); c != again || again == first {
		t.Fatalf("cursor at %d after acking a, stored at %d then again at %d", c, first, again)
	}
}

func TestAnAckLocatedBeforeItsQueueWasDeletedAndRecreatedIsNotFound(t *testing.T) {
	ctx := context.Background()
	for name, remove := range map[string]func(s *Store) (bool, error){
		"detached": func(s *Store) (bool, error) { return s.detachQueue(ctx, "", "q") },
		"deleted":  func(s *Store) (bool, error) { return s.DeleteQueue(ctx, "", "q") },
	} {
		t.Run(name, func(t *testing.T) {
			s := openTestStore(t, clock.NewManual(t0))
			uuid, _, _ := pushOne(t, s, "q", "a")
			var renewed string
			between(s, func() {
				if existed, err := remove(s); err != nil || !existed {
					t.Fatalf("delete queue = %v, %v", existed, err)
				}
				renewed, _, _ = pushOne(t, s, "q", "a")
			})
			items := []combtype.AckItem{{TxnID: "a", PartitionID: uuid}}
			raced, err := s.Ack(ctx, "", "g", items)
			if err != nil || raced[0].Success || raced[0].Err != combtype.ErrMessageNotFound {
				t.Fatalf("ack into the deleted queue = %+v, %v", raced, err)
			}
			if after, err := s.Ack(ctx, "", "g", items); err != nil || !reflect.DeepEqual(raced, after) {
				t.Fatalf("the same ack after the delete = %+v, %v; raced = %+v", after, err, raced)
			}
			if renewed == uuid {
				t.Fatal("the recreated queue has the old partition")
			}
		})
	}
}

func TestAnAckOfAMessageStoredAfterItWasLocatedFindsIt(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	uuid, pid, _ := pushOne(t, s, "q", "a")
	var late int64
	between(s, func() { _, _, late = pushOne(t, s, "q", "late") })
	res, err := s.Transaction(ctx, "", []combtype.TxOp{{Type: "ack", Ack: combtype.AckItem{TxnID: "late", PartitionID: uuid, Group: "g"}}})
	if err != nil || !res[0].Ack.Success {
		t.Fatalf("transaction acking a message stored after it was located = %+v, %v", res, err)
	}
	if c := committed(t, s, pid, "g"); c != late {
		t.Fatalf("cursor at %d, want %d", c, late)
	}
}

func TestAWholeBatchIsLocatedInItsLeaseAsInTheKeyIndex(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	items := make([]combtype.PushItem, 20)
	for i := range items {
		items[i] = combtype.PushItem{Queue: "q", Payload: []byte{byte(i)}}
	}
	if _, err := s.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	pushOne(t, s, "q", "after") // another segment, outside the batch
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10})
	if err != nil || len(res.Messages) != 10 {
		t.Fatalf("pop = %+v, %v", res, err)
	}
	var pid int64
	if err := s.rdb.QueryRow(`SELECT id FROM partitions`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	ids := []string{"after", "nothing"}
	for _, m := range res.Messages {
		ids = append(ids, m.TxnID)
	}
	want, err := txnOffsets(ctx, s.r, pid, ids)
	if err != nil || len(want) != 11 {
		t.Fatalf("key index = %v, %v", want, err)
	}
	delete(want, "after")
	got, err := leasedOffsets(ctx, s.r, pid, ids, map[leaseRef]int{{"g", res.LeaseID}: 10})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("found in the batch = %v, %v; want %v", got, err, want)
	}
	// Fewer items than half the batch are left to the key index, and so is
	// a lease the cursor does not hold.
	for _, leases := range []map[leaseRef]int{{{"g", res.LeaseID}: 4}, {{"g", "other"}: 10}, {{"h", res.LeaseID}: 10}} {
		if got, err := leasedOffsets(ctx, s.r, pid, ids, leases); err != nil || len(got) != 0 {
			t.Fatalf("found with %v = %v, %v", leases, got, err)
		}
	}
}

// A batch a claim has just handed out is located from memory, and finds
// what the key index finds: per partition of a lease that spans several,
// and nothing for another lease or another partition's uuid.
func TestARecentBatchIsLocatedFromMemoryAsInTheKeyIndex(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	var items []combtype.PushItem
	for i := range 30 {
		items = append(items, combtype.PushItem{Queue: "q", Partition: []string{"a", "b", "c"}[i%3], Payload: []byte{byte(i)}})
	}
	if _, err := s.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 25, Partitions: 3})
	if err != nil || len(res.Messages) == 0 || res.PartitionsClaimed < 2 {
		t.Fatalf("pop = %+v, %v; want a batch over several partitions", res, err)
	}
	byPart := map[string][]string{}
	for _, m := range res.Messages {
		byPart[m.PartitionID] = append(byPart[m.PartitionID], m.TxnID)
	}
	for part, ids := range byPart {
		var pid int64
		if err := s.rdb.QueryRow(`SELECT id FROM partitions WHERE uuid = ?`, part).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		want, err := txnOffsets(ctx, s.r, pid, ids)
		if err != nil || len(want) != len(ids) {
			t.Fatalf("key index = %v, %v", want, err)
		}
		wanted := map[string]bool{"nothing": true}
		for _, id := range ids {
			wanted[id] = true
		}
		got := map[string]int64{}
		s.leased.find(res.LeaseID, part, wanted, got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("partition %s: found in memory %v, want %v", part, got, want)
		}
		none := map[string]int64{}
		s.leased.find("another-lease", part, wanted, none)
		s.leased.find(res.LeaseID, "another-partition", wanted, none)
		if len(none) != 0 {
			t.Errorf("found %v under another lease or partition", none)
		}
	}
	// And the ack of the whole batch, located that way, completes it.
	var acks []combtype.AckItem
	for _, m := range res.Messages {
		acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Group: "g"})
	}
	out, err := s.Ack(ctx, "", "g", acks)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		if !r.Success {
			t.Fatalf("ack %d = %+v", i, r)
		}
	}
}

func TestAnAckAfterCloseIsRefusedAsClosed(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	uuid, _, _ := pushOne(t, s, "q", "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ack(ctx, "", "", []combtype.AckItem{{TxnID: "a", PartitionID: uuid}}); !errors.Is(err, combtype.ErrClosed) {
		t.Fatalf("ack after close = %v", err)
	}
	if _, err := s.Transaction(ctx, "", []combtype.TxOp{{Type: "ack", Ack: combtype.AckItem{TxnID: "a", PartitionID: uuid}}}); !errors.Is(err, combtype.ErrClosed) {
		t.Fatalf("transaction after close = %v", err)
	}
}

// A push that wakes many groups hands out a lease of one message to each,
// and each group's ack comes back at once: every one of them is located
// from memory, not only the last few hundred leases. What is kept stays
// bounded by messages, the oldest leases forgotten first.
func TestTheLeasesOfAWideWakeAreAllLocatedFromMemory(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "only", Payload: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	const groups = 400 // more leases than were ever kept by count (256)
	leases := make([]string, groups)
	var part string
	for i := range groups {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%d", i), Batch: 1})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("pop of g%d = %+v, %v", i, res, err)
		}
		leases[i], part = res.LeaseID, res.Messages[0].PartitionID
	}
	for i, l := range leases {
		got := map[string]int64{}
		s.leased.find(l, part, map[string]bool{"only": true}, got)
		if off, ok := got["only"]; !ok || off != 0 {
			t.Fatalf("lease of g%d: found %v in memory, want only at 0", i, got)
		}
	}

	var r recentLeases
	msgs := make([]combtype.Message, 1000)
	for i := range msgs {
		msgs[i] = combtype.Message{PartitionID: "p", TxnID: fmt.Sprint(i), Offset: int64(i)}
	}
	for i := range 2 * maxRecentFrames / len(msgs) {
		r.put(fmt.Sprint("lease-", i), msgs)
	}
	if r.frames > maxRecentFrames || len(r.byID)*len(msgs) != r.frames {
		t.Fatalf("kept %d frames in %d leases, bound %d", r.frames, len(r.byID), maxRecentFrames)
	}
	got := map[string]int64{}
	r.find("lease-0", "p", map[string]bool{"0": true}, got)
	if len(got) != 0 {
		t.Errorf("the oldest lease is still kept past the bound: %v", got)
	}
	r.find(fmt.Sprint("lease-", 2*maxRecentFrames/len(msgs)-1), "p", map[string]bool{"999": true}, got)
	if got["999"] != 999 {
		t.Errorf("the newest lease is not kept: %v", got)
	}
	r.put("too-long", make([]combtype.Message, maxRecentFrames+1))
	if _, ok := r.byID["too-long"]; ok || r.frames > maxRecentFrames {
		t.Errorf("a lease longer than the bound was kept (%d frames)", r.frames)
	}
}
