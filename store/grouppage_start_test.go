package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// A group's page starts at its first possible position, and that start
// loses nothing: the group's explicit cursor rows on a queue made before
// the queue it subscribes to, partitions of a queue made between them
// (not the group's) and partitions added to its queues later all come in
// partition order, page after page.
func TestGroupPageStartsAtTheGroupsFirstPosition(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	push := func(queue string, parts ...string) {
		t.Helper()
		var items []combtype.PushItem
		for _, p := range parts {
			items = append(items, combtype.PushItem{Queue: queue, Partition: p, TxnID: queue + p, Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	push("before", "x")               // not the group's, made first
	push("seeked", "s0", "s1")        // the group's through a seek of one partition
	push("between", "b0", "b1", "b2") // not the group's
	push("subscribed", "u0", "u1")    // the group's through a subscription
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "seeked", Partition: "s1",
		Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "subscribed", Group: "g", Batch: 1}); err != nil {
		t.Fatal(err)
	}
	// h's only cursor row is on u1; its subscription covers u0 before it.
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "subscribed", Partition: "u1", Group: "h", Batch: 1}); err != nil {
		t.Fatal(err)
	}
	push("between", "b3")
	push("subscribed", "u2")
	push("seeked", "s2")

	for _, group := range []string{"g", "h"} {
		checkGroupPages(t, s, group)
	}
}

func checkGroupPages(t *testing.T, s *Store, group string) {
	t.Helper()
	ctx := context.Background()
	var got []string
	after := ""
	for range 20 {
		lags, _, info, err := s.GroupPage(ctx, "", group, combtype.Page{Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lags {
			got = append(got, l.Queue+"/"+l.Partition)
		}
		if !info.More {
			break
		}
		after = info.Next
	}
	// What the group has a position on, in partition order, read off the
	// tables themselves.
	rows, err := s.r.QueryContext(ctx, `SELECT q.name, p.name FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.group_name = ?1)
			OR EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = p.queue_id AND s.group_name = ?1)
		ORDER BY p.id`, group)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for rows.Next() {
		var q, p string
		if err := rows.Scan(&q, &p); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s/%s", q, p))
	}
	rows.Close()
	if len(want) < 3 || !slices.Equal(got, want) {
		t.Fatalf("%s: pages listed %v, the group's positions are %v", group, got, want)
	}
	for _, w := range got {
		if w == "before/x" || w[:8] == "between/" {
			t.Fatalf("pages list %s, not the group's", w)
		}
	}
}
