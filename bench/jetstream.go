package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsServer is an embedded NATS server with JetStream on a file store.
type jsServer struct {
	srv *server.Server
	url string
	// prefilled, when set, restarts the server on the same store with
	// sync_always once a fetch row has stored its messages.
	prefilled func() error
}

// startJetStream starts a server storing under dir. With syncAlways every
// write is fsynced before it is acknowledged, as comb does every commit of
// a push or an ack; without it JetStream fsyncs on a timer (its default).
func startJetStream(dir string, syncAlways bool) (*jsServer, error) {
	j, err := startJetStreamServer(dir, false)
	if err != nil || !syncAlways {
		return j, err
	}
	j.prefilled = func() error {
		j.stop()
		k, err := startJetStreamServer(dir, true)
		if err != nil {
			return err
		}
		*j = *k
		return nil
	}
	return j, nil
}

func startJetStreamServer(dir string, syncAlways bool) (*jsServer, error) {
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: dir, SyncAlways: syncAlways,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("nats server not ready")
	}
	return &jsServer{srv: srv, url: srv.ClientURL()}, nil
}

func (j *jsServer) stop() {
	j.srv.Shutdown()
	j.srv.WaitForShutdown()
}

func (j *jsServer) connect() (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(j.url)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

func (j *jsServer) createStream(ctx context.Context) error {
	nc, js, err := j.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	return nil
}

// publishBatch publishes n messages asynchronously and waits for every
// acknowledgement, which is what one comb push of n items waits for.
func publishBatch(js jetstream.JetStream, pl *payloads, seq *atomic.Int64, n, partitions int, futs []jetstream.PubAckFuture) (int, error) {
	futs = futs[:0]
	for range n {
		i := seq.Add(1)
		f, err := js.PublishAsync("orders.p"+strconv.FormatInt(i%int64(partitions), 10), pl.at(i))
		if err != nil {
			return 0, fmt.Errorf("publish: %w", err)
		}
		futs = append(futs, f)
	}
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return 0, fmt.Errorf("publish ack: %w", err)
		case <-time.After(30 * time.Second):
			return 0, errors.New("publish ack timed out")
		}
	}
	return n, nil
}

func (j *jsServer) push(ctx context.Context, cfg config, pl *payloads, batch int) (float64, error) {
	if err := j.createStream(ctx); err != nil {
		return 0, err
	}
	if j.prefilled != nil {
		if err := j.prefilled(); err != nil {
			return 0, err
		}
	}
	var seq, acked atomic.Int64
	var errOnce sync.Once
	var firstErr error
	conns := make([]*nats.Conn, cfg.conns)
	streams := make([]jetstream.JetStream, cfg.conns)
	for i := range conns {
		nc, js, err := j.connect()
		if err != nil {
			return 0, err
		}
		defer nc.Close()
		conns[i], streams[i] = nc, js
	}
	start := time.Now()
	deadline := start.Add(cfg.duration)
	var wg sync.WaitGroup
	for i := range cfg.conns {
		js := streams[i]
		wg.Go(func() {
			futs := make([]jetstream.PubAckFuture, 0, batch)
			for ctx.Err() == nil && time.Now().Before(deadline) {
				n, err := publishBatch(js, pl, &seq, batch, cfg.partitions, futs)
				acked.Add(int64(n))
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(acked.Load()) / elapsed.Seconds(), nil
}

func (j *jsServer) prefill(ctx context.Context, pl *payloads, n, partitions int) error {
	var seq, left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	for range 16 {
		nc, js, err := j.connect()
		if err != nil {
			return err
		}
		defer nc.Close()
		wg.Go(func() {
			var futs []jetstream.PubAckFuture
			for ctx.Err() == nil {
				take := int64(100)
				if rest := left.Add(-take); rest < 0 {
					take += rest
				}
				if take <= 0 {
					return
				}
				if _, err := publishBatch(js, pl, &seq, int(take), partitions, futs); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// fetchAck is popAck's counterpart: one durable pull consumer per group,
// perGroup workers each fetching a batch and acking every message.
func (j *jsServer) fetchAck(ctx context.Context, cfg config, pl *payloads, partitions, perGroup, groups, prefill int) (float64, error) {
	if err := j.createStream(ctx); err != nil {
		return 0, err
	}
	if err := j.prefill(ctx, pl, prefill, partitions); err != nil {
		return 0, fmt.Errorf("prefill: %w", err)
	}
	if j.prefilled != nil {
		// The store was filled by a server without sync_always (filling it
		// one fsync per publish is not what is measured); reopen it with the
		// setting the row is about.
		if err := j.prefilled(); err != nil {
			return 0, err
		}
	}
	target := int64(prefill * groups)
	runCtx, cancel := context.WithTimeout(ctx, max(cfg.duration*4, 20*time.Second))
	defer cancel()
	type worker struct {
		cons  jetstream.Consumer
		group *atomic.Int64
	}
	var workers []worker
	for g := range groups {
		counter := new(atomic.Int64)
		for range perGroup {
			nc, js, err := j.connect()
			if err != nil {
				return 0, err
			}
			defer nc.Close()
			cons, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
				Durable: "g" + strconv.Itoa(g), AckPolicy: jetstream.AckExplicitPolicy,
				DeliverPolicy: jetstream.DeliverAllPolicy, MaxAckPending: 100000,
			})
			if err != nil {
				return 0, fmt.Errorf("create consumer: %w", err)
			}
			workers = append(workers, worker{cons, counter})
		}
	}
	var acked, finished atomic.Int64
	var errOnce sync.Once
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for runCtx.Err() == nil && w.group.Load() < int64(prefill) {
				batch, err := w.cons.Fetch(cfg.popBatch, jetstream.FetchMaxWait(time.Second))
				if err != nil {
					if runCtx.Err() == nil {
						errOnce.Do(func() { firstErr = err })
					}
					return
				}
				n := 0
				for m := range batch.Messages() {
					if err := m.Ack(); err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
					n++
				}
				w.group.Add(int64(n))
				if acked.Add(int64(n)) >= target {
					finished.CompareAndSwap(0, int64(time.Since(start)))
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if finished.Load() == 0 {
		// The drain ran out of time: the rate so far is still a rate.
		fmt.Fprintf(os.Stderr, "  drain cut at %s: %d of %d acked\n", time.Since(start).Round(time.Millisecond), acked.Load(), target)
		return float64(acked.Load()) / time.Since(start).Seconds(), nil
	}
	return float64(target) / time.Duration(finished.Load()).Seconds(), nil
}
