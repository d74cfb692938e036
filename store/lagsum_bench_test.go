package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkLagSum sums a tenant's lag over one queue of many partitions
// (COMB_LAGSUM_PARTITIONS, 100,000 by default) read by five groups: two
// from the oldest, two from new messages, one from a time; 1% of the
// partitions are written after they subscribe and a few have cursor rows.
// The time is an hour back (COMB_LAGSUM_FROM_AGO), before every partition
// was written: that group lags on every partition.
// Or, with COMB_LAGSUM_DB, over that database file (a copy: the groups
// are subscribed in it). enumerate is the read summarise did before
// sumLag, one row per position; sum is sumLag. Each runs three times
// (COMB_LAGSUM_ROUNDS), in turn, so both see the same load.
// COMB_LAGSUM_TIMESTAMP_GROUPS adds that many more groups from the time;
// COMB_LAGSUM_ENUMERATE=0 times sum alone and does not hold it to the
// enumeration (which takes minutes at a million partitions).
func BenchmarkLagSum(b *testing.B) {
	ctx := context.Background()
	path := os.Getenv("COMB_LAGSUM_DB")
	fresh := path == ""
	if fresh {
		path = filepath.Join(b.TempDir(), "comb.db")
	}
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	queue := "wide"
	var names []string
	if fresh {
		n := 100000
		if v := os.Getenv("COMB_LAGSUM_PARTITIONS"); v != "" {
			if n, err = strconv.Atoi(v); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < n; i += 2000 {
			var items []combtype.PushItem
			for j := i; j < min(i+2000, n); j++ {
				items = append(items, combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%07d", j), Payload: []byte(`1`)})
			}
			if _, err := s.Push(ctx, "", items); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		if err := s.r.QueryRowContext(ctx, `SELECT q.name FROM queues q JOIN partitions p ON p.queue_id = q.id
			WHERE q.tenant = '' GROUP BY q.id ORDER BY COUNT(*) DESC LIMIT 1`).Scan(&queue); err != nil {
			b.Fatal(err)
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT p.name FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = '' AND q.name = ? ORDER BY p.id`, queue)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
	}
	rows.Close()
	ago := time.Hour
	if v := os.Getenv("COMB_LAGSUM_FROM_AGO"); v != "" {
		if ago, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	from := time.Now().Add(-ago).Format(time.RFC3339Nano)
	type group struct {
		name string
		req  combtype.PopRequest
	}
	groups := []group{
		{"lagsum-all1", combtype.PopRequest{SubscriptionMode: "all"}},
		{"lagsum-all2", combtype.PopRequest{SubscriptionMode: "all"}},
		{"lagsum-new1", combtype.PopRequest{SubscriptionMode: "new"}},
		{"lagsum-new2", combtype.PopRequest{SubscriptionMode: "new"}},
		{"lagsum-from", combtype.PopRequest{SubscriptionFrom: from}},
	}
	if v := os.Getenv("COMB_LAGSUM_TIMESTAMP_GROUPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			groups = append(groups, group{fmt.Sprintf("lagsum-from%d", i), combtype.PopRequest{SubscriptionFrom: from}})
		}
	}
	for _, g := range groups {
		req := g.req
		req.Queue, req.Group, req.Partition = queue, g.name, "lagsum-none"
		if _, err := s.Pop(ctx, "", req); err != nil {
			b.Fatal(err)
		}
		for i := range 10 { // a few cursor rows
			req.Partition, req.AutoAck = names[i*len(names)/10], true
			if _, err := s.Pop(ctx, "", req); err != nil {
				b.Fatal(err)
			}
		}
	}
	var items []combtype.PushItem
	for i := 0; i < len(names); i += 100 {
		items = append(items, combtype.PushItem{Queue: queue, Partition: names[i], Payload: []byte(`2`)})
	}
	if _, err := s.Push(ctx, "", items); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	enumerate := os.Getenv("COMB_LAGSUM_ENUMERATE") != "0"
	gotO, gotA, err := s.sumLag(ctx, "", now)
	if err != nil {
		b.Fatal(err)
	}
	if enumerate {
		wantO, wantA := enumeratedLag(b, s, "", now)
		if err := sameLag("offset lag", &gotO, &wantO); err != nil {
			b.Fatal(err)
		}
		if err := sameLag("time lag", &gotA, &wantA); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d partitions, %d groups, %d positions", len(names), len(groups), gotO.n)
	rounds := 3
	if v := os.Getenv("COMB_LAGSUM_ROUNDS"); v != "" {
		if rounds, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for range rounds {
		if enumerate {
			b.Run("enumerate", func(b *testing.B) {
				for range b.N {
					enumeratedLag(b, s, "", now)
				}
			})
		}
		b.Run("sum", func(b *testing.B) {
			for range b.N {
				if _, _, err := s.sumLag(ctx, "", now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
