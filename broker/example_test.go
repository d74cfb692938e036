package broker_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// A program embeds comb by opening a database file: push, pop with a lease,
// and ack what it handled. Nothing here speaks HTTP.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "comb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	b, err := broker.Open(ctx, broker.Options{Path: filepath.Join(dir, "app.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	if _, err := b.Push(ctx, []combtype.PushItem{
		{Queue: "jobs", Payload: []byte(`{"n":1}`), TxnID: "job-1"},
		{Queue: "jobs", Payload: []byte(`{"n":2}`), TxnID: "job-2"},
	}); err != nil {
		log.Fatal(err)
	}

	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "jobs", Batch: 10, Wait: true, Timeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	acks := make([]combtype.AckItem, 0, len(res.Messages))
	for _, m := range res.Messages {
		fmt.Printf("%s %s\n", m.TxnID, m.Payload)
		acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID})
	}
	results, err := b.Ack(ctx, acks)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("acked:", len(results), results[0].Success)
	// Output:
	// job-1 {"n":1}
	// job-2 {"n":2}
	// acked: 2 true
}

// Replay is moving a consumer group's cursor: capture where a group stands
// in a snapshot, let it consume, then seek it back and receive the same
// messages again.
func ExampleBroker_GroupSeek() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "comb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := broker.Open(ctx, broker.Options{Path: filepath.Join(dir, "app.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	pop := combtype.PopRequest{Queue: "orders", Group: "billing", Batch: 10, AutoAck: true}
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "orders", Payload: []byte(`"a"`)}}); err != nil {
		log.Fatal(err)
	}
	// The group's first pop registers it; it sees everything so far.
	if _, err := b.Pop(ctx, pop); err != nil {
		log.Fatal(err)
	}
	if _, err := b.SnapshotCreate(ctx, combtype.CreateSnapshotRequest{Name: "before-v42", Group: "billing", Queue: "orders"}); err != nil {
		log.Fatal(err)
	}
	if _, err := b.Push(ctx, []combtype.PushItem{
		{Queue: "orders", Payload: []byte(`"b"`)}, {Queue: "orders", Payload: []byte(`"c"`)},
	}); err != nil {
		log.Fatal(err)
	}
	first, err := b.Pop(ctx, pop)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("consumed:", len(first.Messages))

	// Preview, then apply: the group goes back to the snapshot.
	preview, err := b.GroupSeek(ctx, combtype.SeekRequest{Group: "billing", Queue: "orders",
		Target: combtype.SeekTarget{Snapshot: "before-v42"}, DryRun: true})
	if err != nil {
		log.Fatal(err)
	}
	p := preview.Partitions[0]
	fmt.Printf("dry run: %d -> %d, redeliver %d\n", p.From, p.To, p.Redeliver)
	if _, err := b.GroupSeek(ctx, combtype.SeekRequest{Group: "billing", Queue: "orders",
		Target: combtype.SeekTarget{Snapshot: "before-v42"}}); err != nil {
		log.Fatal(err)
	}
	again, err := b.Pop(ctx, pop)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range again.Messages {
		fmt.Printf("again: %s\n", m.Payload)
	}
	// Output:
	// consumed: 2
	// dry run: 2 -> 0, redeliver 2
	// again: "b"
	// again: "c"
}
