// Command desktop is where a desktop or device program that embeds comb
// starts from: one database file in the user's config directory, a
// producer that records events as they happen, and a consumer group that
// handles them, with nothing lost if the program is closed, killed or the
// machine loses power between the two.
//
//	go run ./examples/desktop            # runs until Ctrl-C or SIGTERM
//	go run ./examples/desktop -n 20      # handles 20 events, then exits
//	go run ./examples/desktop -http 127.0.0.1:6632
//	                                     # also serves the HTTP API and the
//	                                     # console at http://127.0.0.1:6632/
//
// Run it twice: events recorded but not handled before the first run ended
// are handled by the second, because the consumer group's position is
// durable in the same file as the events.
//
// With -http the same process serves comb's HTTP API and web console on
// that address, next to its own producer and consumer: Queen's client SDKs
// and a browser see the program's queues live, and a shutdown answers
// their parked pops and finishes their requests before the file closes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
)

func main() {
	n := flag.Int("n", 0, "stop after handling this many events (0: run until interrupted)")
	db := flag.String("db", "", "database file (default: comb-desktop/events.db in the user's config directory)")
	httpAddr := flag.String("http", "", "also serve the HTTP API and the console on this loopback address, e.g. 127.0.0.1:6632 (off when empty)")
	flag.Parse()
	// Ctrl-C sends SIGINT; a service manager, a logout or `kill` sends
	// SIGTERM. Either one ends run normally, so the database closes clean.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *db, *httpAddr, *n); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

type event struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
}

func run(ctx context.Context, path, httpAddr string, limit int) error {
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return fmt.Errorf("find config directory: %w", err)
		}
		path = filepath.Join(dir, "comb-desktop", "events.db")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	b, err := broker.Open(ctx, broker.Options{Path: path})
	if err != nil {
		return err
	}
	defer b.Close()
	log.Printf("events in %s", path)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if httpAddr != "" {
		served, err := serveHTTP(ctx, b, httpAddr)
		if err != nil {
			return err
		}
		// Runs before b.Close: the server stops when ctx is cancelled,
		// and the broker may close only once it has.
		defer func() {
			cancel()
			if err := <-served; err != nil {
				log.Printf("http: %v", err)
			}
		}()
	}

	// The producer: in a real program, whatever the user or a sensor does.
	// Push returns once the event is durable on disk.
	produced := make(chan error, 1)
	go func() { produced <- produce(ctx, b) }()

	// The consumer: a named group gets every event once, at its own pace;
	// a second group (say "sync") would get them all again, independently.
	handled := 0
	for limit == 0 || handled < limit {
		res, err := b.Pop(ctx, combtype.PopRequest{Queue: "events", Group: "ui", Batch: 10, Wait: true, Timeout: 5 * time.Second})
		if err != nil {
			break // ctx ended: the unacked batch is redelivered on the next run
		}
		acks := make([]combtype.AckItem, 0, len(res.Messages))
		for _, m := range res.Messages {
			var e event
			if err := json.Unmarshal(m.Payload, &e); err != nil {
				// A payload this program cannot read goes to the dead-letter
				// queue instead of blocking the ones behind it.
				acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID,
					Group: "ui", Status: "dlq", Error: err.Error()})
				continue
			}
			fmt.Printf("handled %s from %s\n", e.Kind, e.At.Format(time.TimeOnly))
			acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Group: "ui"})
			handled++
		}
		if len(acks) > 0 {
			if _, err := b.Ack(context.WithoutCancel(ctx), acks); err != nil {
				return fmt.Errorf("ack: %w", err)
			}
		}
	}
	cancel()
	if err := <-produced; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func produce(ctx context.Context, b *broker.Broker) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			payload, err := json.Marshal(event{Kind: "click", At: now})
			if err != nil {
				return err
			}
			if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "events", Payload: payload}}); err != nil {
				return fmt.Errorf("push: %w", err)
			}
		}
	}
}

// serveHTTP serves b's HTTP API and console on addr until ctx ends; the
// channel yields Serve's result once it has returned. Without auth,
// httpd.Listen accepts only a loopback address.
func serveHTTP(ctx context.Context, b *broker.Broker, addr string) (<-chan error, error) {
	cfg := httpd.Config{Logger: slog.Default()}
	ln, err := httpd.Listen(addr, cfg)
	if err != nil {
		return nil, err
	}
	srv := httpd.NewServer(b, cfg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	log.Printf("API and console at http://%s/", ln.Addr())
	return served, nil
}
