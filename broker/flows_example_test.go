package broker_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/forward"
	"github.com/comb-broker/comb/httpd"
)

// openTemp opens a broker on a new file in a temporary directory; done
// closes it and removes the directory.
func openTemp() (b *broker.Broker, done func()) {
	dir, err := os.MkdirTemp("", "comb-example")
	if err != nil {
		log.Fatal(err)
	}
	b, err = broker.Open(context.Background(), broker.Options{Path: filepath.Join(dir, "app.db"),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	return b, func() {
		b.Close()
		os.RemoveAll(dir)
	}
}

// A message that keeps failing goes to the dead-letter queue once its
// queue's retryLimit is spent; an operator lists it, fixes what was wrong
// and re-drives it into the queue as a new message.
func ExampleBroker_DLQRedrive() {
	ctx := context.Background()
	b, done := openTemp()
	defer done()

	opts := combtype.DefaultQueueOptions()
	opts.RetryLimit = 0 // the first failure dead-letters
	if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "mail", Options: opts}); err != nil {
		log.Fatal(err)
	}
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "mail", TxnID: "m-1", Payload: []byte(`{"to":"x"}`)}}); err != nil {
		log.Fatal(err)
	}
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "mail", Group: "sender"})
	if err != nil {
		log.Fatal(err)
	}
	m := res.Messages[0]
	acks, err := b.Ack(ctx, []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID,
		Group: "sender", Status: combtype.AckFailed, Error: "smtp: no route"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dead-lettered:", acks[0].DLQ)

	dead, total, err := b.DLQList(ctx, combtype.DLQFilter{Queue: "mail"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in the DLQ:", total, dead[0].TxnID, dead[0].ErrorMessage)

	rd, err := b.DLQRedrive(ctx, combtype.RedriveRequest{Queue: "mail"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("re-driven:", rd.Redriven, "left:", rd.Remaining)
	again, err := b.Pop(ctx, combtype.PopRequest{Queue: "mail", Group: "sender"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("delivered again: %s\n", again.Messages[0].Payload)
	// Output:
	// dead-lettered: true
	// in the DLQ: 1 m-1 smtp: no route
	// re-driven: 1 left: 0
	// delivered again: {"to":"x"}
}

// A tenant handle acts on that tenant's queues only; the Broker Open
// returns is the default tenant's.
func ExampleBroker_Tenant() {
	ctx := context.Background()
	b, done := openTemp()
	defer done()

	acme := b.Tenant("acme")
	if _, err := acme.Push(ctx, []combtype.PushItem{{Queue: "orders", Payload: []byte(`1`)}}); err != nil {
		log.Fatal(err)
	}
	mine, _ := acme.QueueNames(ctx)
	theirs, _ := b.QueueNames(ctx)
	fmt.Println("acme:", mine, "default:", theirs)
	// Output:
	// acme: [orders] default: []
}

// A forwarder moves a local queue to an upstream broker over HTTP, through
// the local broker's own pop and ack. Its definition is stored, checked,
// in the database; a forward.Runner runs it. Here the upstream is a second
// broker served from the same process.
func ExampleForwarders_Put() {
	ctx := context.Background()
	device, doneDevice := openTemp()
	defer doneDevice()
	cloud, doneCloud := openTemp()
	defer doneCloud()

	cfg := httpd.Config{Logger: slog.New(slog.DiscardHandler)}
	ln, err := httpd.Listen("127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- httpd.NewServer(cloud, cfg).Serve(serveCtx, ln) }()
	defer func() { stop(); <-served }()

	// A definition the broker refuses: the upstream must be an HTTP URL.
	bad := &combtype.Forwarder{Name: "up", Queue: "readings", UpstreamURL: "ftp://cloud"}
	fmt.Println("refused:", device.Forwarders().Put(ctx, bad, false) != nil)

	r := forward.New(device, forward.Options{DeviceID: "dev1", Logger: slog.New(slog.DiscardHandler), Poll: 100 * time.Millisecond})
	if err := r.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer r.Stop()
	if _, err := r.Create(ctx, &combtype.Forwarder{Name: "up", Queue: "readings",
		UpstreamURL: "http://" + ln.Addr().String(), IDPrefix: combtype.ForwarderNoIDPrefix}); err != nil {
		log.Fatal(err)
	}
	stored, err := device.Forwarders().Get(ctx, "up")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", stored.Direction, stored.Group, stored.Batch)

	if _, err := device.Push(ctx, []combtype.PushItem{{Queue: "readings", TxnID: "r-1", Payload: []byte(`{"c":21.5}`)}}); err != nil {
		log.Fatal(err)
	}
	for {
		res, err := cloud.Pop(ctx, combtype.PopRequest{Queue: "readings", Wait: true, Timeout: time.Second, AutoAck: true})
		if err != nil {
			log.Fatal(err)
		}
		if len(res.Messages) > 0 {
			fmt.Printf("upstream got %s %s\n", res.Messages[0].TxnID, res.Messages[0].Payload)
			break
		}
	}
	// Output:
	// refused: true
	// stored: push comb-forward.up 500
	// upstream got r-1 {"c":21.5}
}

// The same process serves the HTTP API over the broker it uses, so
// Queen's client SDKs reach the program's own queues; what one side
// pushes the other pops.
func Example_serveHTTP() {
	ctx := context.Background()
	b, done := openTemp()
	defer done()

	cfg := httpd.Config{Logger: slog.New(slog.DiscardHandler)}
	ln, err := httpd.Listen("127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- httpd.NewServer(b, cfg).Serve(serveCtx, ln) }()

	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "jobs", Payload: []byte(`{"n":7}`)}}); err != nil {
		log.Fatal(err)
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/pop/queue/jobs?autoAck=true")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"data":{"n":7}`))

	stop()
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	// Output:
	// 200 true
}
