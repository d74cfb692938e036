package broker_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/comb-broker/comb/broker"
)

// A streaming step without HTTP: pop with the query's group, read the
// partition's state, and commit the new state, the sink push and the ack
// as one cycle. A second cycle under the same lease is refused whole.
func ExampleBroker_Cycle() {
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

	reg, err := b.RegisterStreamQuery(ctx, broker.StreamRegisterRequest{Name: "total", SourceQueue: "readings",
		SinkQueue: "totals", ConfigHash: "v1"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := b.Push(ctx, "", []broker.PushItem{
		{Queue: "readings", Payload: []byte(`{"v":2}`)},
		{Queue: "readings", Payload: []byte(`{"v":3}`)},
	}); err != nil {
		log.Fatal(err)
	}
	res, err := b.Pop(ctx, broker.PopRequest{Queue: "readings", Group: "streams.total", Batch: 10})
	if err != nil {
		log.Fatal(err)
	}
	last := res.Messages[len(res.Messages)-1]
	state, err := b.StreamState(ctx, "", reg.Query.ID, last.PartitionID, broker.StateFilter{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("state rows before:", len(state))

	req := broker.CycleRequest{QueryID: reg.Query.ID, PartitionID: last.PartitionID, Group: "streams.total",
		StateOps:     []broker.StateOp{{Type: broker.StateUpsert, Key: "sum", Value: []byte(`{"sum":5}`)}},
		Push:         []broker.PushItem{{Queue: "totals", Payload: []byte(`{"sum":5}`)}},
		Ack:          &broker.CycleAck{TxnID: last.TxnID, LeaseID: last.LeaseID, Count: 2},
		ReleaseLease: true}
	out, err := b.Cycle(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed:", out.Error == "", out.StateOpsApplied, out.Pushes[0].Status)
	again, err := b.Cycle(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("again:", again.Error)
	state, err = b.StreamState(ctx, "", reg.Query.ID, last.PartitionID, broker.StateFilter{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("state: %s=%s\n", state[0].Key, state[0].Value)
	// Output:
	// state rows before: 0
	// committed: true 1 queued
	// again: Invalid or expired lease
	// state: sum={"sum":5}
}
