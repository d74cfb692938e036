//go:build unix

package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

const (
	queue      = "backlog"
	partitions = 16
	batch      = 1000
	// step is the time between two messages on the build's clock: 20M
	// messages span about 23 days, so timestamps to seek to and a
	// retention age mean something.
	step = 100 * time.Millisecond
)

// base is the build clock's first instant.
var base = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// msgClock reads the time off the count of messages handed to the
// broker, so the log's created_at grows with its offsets the same way
// however fast the build runs, and a resumed build continues the line.
type msgClock struct{ n *atomic.Int64 }

func (c msgClock) Now() time.Time { return base.Add(time.Duration(c.n.Load()) * step) }

// countFile keeps the number of messages pushed beside the database, so a
// build can be resumed from a copy.
func countFile(db string) string { return db + ".count" }

func readCount(db string) (int64, error) {
	b, err := os.ReadFile(countFile(db))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// build pushes ~1 KB messages into db through the broker package, in
// batches of 1000 to one partition at a time from two producers, until the
// file reaches size bytes or limit passes. Half the payloads are English-
// like text (lz4 compresses them), half base64 of random bytes (it does
// not).
func build(ctx context.Context, db string, size int64, limit time.Duration) error {
	n, err := readCount(db)
	if err != nil {
		return err
	}
	var count atomic.Int64
	count.Store(n)
	b, err := broker.Open(ctx, broker.Options{Path: db, Synchronous: "NORMAL", RetentionInterval: -1,
		Clock: msgClock{&count}, Logger: quietLogger()})
	if err != nil {
		return err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	var next atomic.Int64
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewChaCha8([32]byte{byte(w), byte(n), byte(n >> 8), byte(n >> 16)}))
			items := make([]combtype.PushItem, batch)
			raw := make([]byte, 720)
			for ctx.Err() == nil {
				if fileSize(db) >= size {
					return
				}
				k := next.Add(1)
				part := fmt.Sprintf("p%02d", k%partitions)
				first := count.Add(batch) - batch
				for i := range items {
					items[i] = combtype.PushItem{Queue: queue, Partition: part, Payload: payload(rng, first+int64(i), raw)}
				}
				for {
					_, err := b.Push(ctx, items)
					if errors.Is(err, combtype.ErrBusy) {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					if err != nil && ctx.Err() == nil {
						errs[w] = err
						cancel()
					}
					break
				}
			}
		})
	}
	tick := time.NewTicker(10 * time.Second)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
			el := time.Since(start)
			pushed := count.Load() - n
			fmt.Fprintf(os.Stderr, "backlog: build %s: %s, %d messages (+%d, %.0f/s), %s\n", db, gib(fileSize(db)),
				count.Load(), pushed, float64(pushed)/el.Seconds(), el.Round(time.Second))
		}
	}
	tick.Stop()
	// A push cut by the time limit may or may not have committed; the
	// count on disk is what the clock needs, so it errs high, never low.
	if err := errors.Join(errors.Join(errs...), b.Close(), os.WriteFile(countFile(db), []byte(strconv.FormatInt(count.Load(), 10)), 0o600)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "backlog: built %s: %s, %d messages in %s\n", db, gib(fileSize(db)), count.Load()-n, time.Since(start).Round(time.Second))
	return nil
}

const words = "order shipped invoice customer warehouse pallet route driver scanned delivered returned priority express standard parcel depot "

func payload(rng *rand.Rand, id int64, raw []byte) []byte {
	if id%2 == 0 {
		var sb strings.Builder
		fmt.Fprintf(&sb, `{"id":%d,"kind":"event","text":"`, id)
		for sb.Len() < 1000 {
			w := rng.IntN(len(words) - 12)
			sb.WriteString(words[w : w+12])
		}
		sb.WriteString(`"}`)
		return []byte(sb.String())
	}
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	return []byte(fmt.Sprintf(`{"id":%d,"kind":"blob","data":"%s"}`, id, base64.StdEncoding.EncodeToString(raw)))
}

func fileSize(path string) int64 {
	var n int64
	for _, s := range []string{"", "-wal"} {
		if info, err := os.Stat(path + s); err == nil {
			n += info.Size()
		}
	}
	return n
}

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }
