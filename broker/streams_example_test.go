package broker_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// A streaming step without HTTP: pop with the query's group, read the
// partition's state, and commit the new state, the sink push and the ack
// as one cycle. A second cycle under the same lease is refused whole.
func ExampleBroker_StreamCycle() {
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

	reg, err := b.StreamRegister(ctx, combtype.StreamRegisterRequest{Name: "total", SourceQueue: "readings",
		SinkQueue: "totals", ConfigHash: "v1"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := b.Push(ctx, []combtype.PushItem{
		{Queue: "readings", Payload: []byte(`{"v":2}`)},
		{Queue: "readings", Payload: []byte(`{"v":3}`)},
	}); err != nil {
		log.Fatal(err)
	}
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "readings", Group: "streams.total", Batch: 10})
	if err != nil {
		log.Fatal(err)
	}
	last := res.Messages[len(res.Messages)-1]
	state, err := b.StreamState(ctx, combtype.StateShard{QueryID: reg.Query.ID, PartitionID: last.PartitionID}, combtype.StateFilter{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("state rows before:", len(state))

	req := combtype.CycleRequest{QueryID: reg.Query.ID, PartitionID: last.PartitionID, Group: "streams.total",
		StateOps:     []combtype.StateOp{{Type: combtype.StateUpsert, Key: "sum", Value: []byte(`{"sum":5}`)}},
		Push:         []combtype.PushItem{{Queue: "totals", Payload: []byte(`{"sum":5}`)}},
		Ack:          &combtype.CycleAck{TxnID: last.TxnID, LeaseID: last.LeaseID, Count: 2},
		ReleaseLease: true}
	out, err := b.StreamCycle(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed:", out.Err == nil, out.StateOpsApplied, out.Pushes[0].Status)
	again, err := b.StreamCycle(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("again:", again.Err)
	state, err = b.StreamState(ctx, combtype.StateShard{QueryID: reg.Query.ID, PartitionID: last.PartitionID}, combtype.StateFilter{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("state: %s=%s\n", state[0].Key, state[0].Value)
	// Output:
	// state rows before: 0
	// committed: true 1 queued
	// again: invalid or expired lease
	// state: sum={"sum":5}
}
