package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// idleAllGroup subscribes group to queue from its oldest message and
// moves it to the end: it has a cursor row on every partition and nothing
// due, so a pop that finds that out walks the queue.
func idleAllGroup(t *testing.T, s *Store, queue, group string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: queue, Group: group, Partition: "none", SubscriptionMode: "all"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: group, Queue: queue, Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
		t.Fatal(err)
	}
}

// TestAnIdleAllGroupsPopsDoNotWalkTheQueueEachTime: a group that may have
// something due anywhere (subscribed to every message, with a cursor row
// on each of 12,000 partitions) walks the queue to find it has nothing
// due; its next pops, with nothing committed since, cost what they cost
// at 10 partitions.
func TestAnIdleAllGroupsPopsDoNotWalkTheQueueEachTime(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	pushPartitions(t, s, "small", "p", 10, 1)
	pushPartitions(t, s, "large", "p", 12000, 1)
	took := map[string]time.Duration{}
	for _, queue := range []string{"small", "large"} {
		idleAllGroup(t, s, queue, "g")
		var times []time.Duration
		for i := range 15 {
			start := time.Now()
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: queue, Group: "g", Batch: 1})
			if i > 0 {
				times = append(times, time.Since(start))
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) != 0 {
				t.Fatalf("%s: pop %d got %d messages, want none", queue, i, len(res.Messages))
			}
		}
		slices.Sort(times)
		took[queue] = times[len(times)/2]
	}
	// A walk of 12,000 partitions takes tens of milliseconds.
	if took["large"] > 3*took["small"]+2*time.Millisecond {
		t.Errorf("a pop with nothing due took %v at 12,000 partitions, %v at 10", took["large"], took["small"])
	}
	t.Logf("a pop with nothing due: %v at 12,000 partitions, %v at 10", took["large"], took["small"])
}

// TestAPopFindsWhatIsMadeDueAfterAnIdleWalk: after a pop found nothing due
// for a group (and kept that), whatever makes something due again is seen
// by the next pop: a push, a seek, a snapshot restored, a nack, a lease
// released or expired, the group deleted and subscribing again. Retention
// keeps live leases and only raises where a log starts, so it makes
// nothing due; the pop after it answers as a walk does.
func TestAPopFindsWhatIsMadeDueAfterAnIdleWalk(t *testing.T) {
	ctx := context.Background()
	type setup struct {
		s     *Store
		clk   *clock.Manual
		lease *combtype.PopResult // the leased message, for the events that need one
	}
	events := []struct {
		name   string
		leased bool // a message of p0003 is leased to the group when the walk finds nothing
		event  func(t *testing.T, u *setup)
		due    bool // the event makes something due
	}{
		{"push", false, func(t *testing.T, u *setup) {
			if _, err := u.s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p0000007", Payload: []byte(`"new"`)}}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"seek", false, func(t *testing.T, u *setup) {
			off := int64(-1)
			if _, err := u.s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Partition: "p0000004",
				Target: combtype.SeekTarget{Offset: &off}}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"snapshot restored", false, func(t *testing.T, u *setup) {
			if _, err := u.s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q",
				Target: combtype.SeekTarget{Snapshot: "start"}}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"nack", true, func(t *testing.T, u *setup) {
			m := u.lease.Messages[0]
			res, err := u.s.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID,
				LeaseID: m.LeaseID, Status: combtype.AckFailed, Group: "g"}})
			if err != nil || len(res) != 1 || !res[0].Success {
				t.Fatalf("nack: %+v %v", res, err)
			}
		}, true},
		{"lease released", true, func(t *testing.T, u *setup) {
			if _, err := u.s.ReleaseLease(ctx, "", u.lease.Messages[0].LeaseID); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"lease expired", true, func(t *testing.T, u *setup) {
			u.clk.Advance(time.Hour) // nothing is committed: time alone
		}, true},
		{"group deleted", false, func(t *testing.T, u *setup) {
			if _, err := u.s.DeleteGroup(ctx, "", "g", "q", true); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"retention", true, func(t *testing.T, u *setup) {
			for _, p := range partitionsOf(t, u.s, "q") {
				if _, err := u.s.EvictPrefix(ctx, p.ID, p.LastOffset+1, u.clk.Now(), EvictLimits{}); err != nil {
					t.Fatal(err)
				}
			}
		}, false},
	}
	for _, e := range events {
		t.Run(e.name, func(t *testing.T) {
			clk := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
			u := &setup{s: openTestStore(t, clk), clk: clk}
			pushPartitions(t, u.s, "q", "p", 10, 2)
			idleAllGroup(t, u.s, "q", "g")
			// Taken on another group at the oldest message of every
			// partition: restoring it moves g back.
			if _, err := u.s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "other", Partition: "none", SubscriptionMode: "all"}); err != nil {
				t.Fatal(err)
			}
			if _, err := u.s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "start", Group: "other", Queue: "q"}); err != nil {
				t.Fatal(err)
			}
			req := combtype.PopRequest{Queue: "q", Group: "g", Batch: 1, SubscriptionMode: "all"}
			if e.leased {
				if _, err := u.s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p0000003", Payload: []byte(`"leased"`)}}); err != nil {
					t.Fatal(err)
				}
				res, err := u.s.Pop(ctx, "", req)
				if err != nil || len(res.Messages) != 1 {
					t.Fatalf("lease a message: %+v %v", res, err)
				}
				u.lease = res
			}
			// The walk that finds nothing due, then a pop that does not
			// walk again.
			for i := range 2 {
				res, err := u.s.Pop(ctx, "", req)
				if err != nil || len(res.Messages) != 0 {
					t.Fatalf("idle pop %d: %+v %v", i, res, err)
				}
			}
			q, err := getQueue(ctx, u.s.r, "", "q")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := u.s.idle.nothingDue(idleKey{q.ID, "g"}, u.s.commitSeq.Load(), micros(clk.Now())); !ok {
				t.Fatal("the walk that found nothing due was not kept")
			}
			e.event(t, u)
			// What a walk finds now, read without the kept answer.
			walked, err := scanCandidates(ctx, u.s.r, q.ID, "g", "", micros(clk.Now()), 1, "")
			if err != nil {
				t.Fatal(err)
			}
			if e.due && len(walked) == 0 {
				t.Fatalf("the event made nothing due: the test sets it up wrong")
			}
			res, err := u.s.Pop(ctx, "", req)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Messages) > 0; got != (len(walked) > 0) {
				t.Errorf("after the %s the pop got %d messages; a walk finds %d partitions due", e.name, len(res.Messages), len(walked))
			}
		})
	}
}

// TestAKeptIdleAnswerEndsWithAnyCommit: a kept "nothing due" holds at the
// commit sequence it was read at, even, and not once a commit has begun
// (odd) or ended since, nor past the expiry of the lease it waits on.
func TestAKeptIdleAnswerEndsWithAnyCommit(t *testing.T) {
	var im idleMarks
	k := idleKey{1, "g"}
	wake := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	im.mark(k, 3, time.Time{}, idleSince{}, 0, nil) // odd: a commit in flight
	if _, ok := im.nothingDue(k, 3, 0); ok {
		t.Error("kept at an odd sequence")
	}
	im.mark(k, 4, wake, idleSince{}, 0, nil)
	for _, c := range []struct {
		seq, now int64
		want     bool
	}{
		{4, micros(wake) - 1, true},
		{4, micros(wake), false}, // the lease has expired
		{5, 0, false},            // a commit is becoming visible
		{6, 0, false},            // and has
	} {
		if got, ok := im.nothingDue(k, c.seq, c.now); ok != c.want || (ok && !got.Equal(wake)) {
			t.Errorf("at %d, %d: %v %v, want %v", c.seq, c.now, got, ok, c.want)
		}
	}
	for i := range maxIdleMarks + 1 { // bounded
		im.mark(idleKey{int64(i + 2), fmt.Sprint(i)}, 4, time.Time{}, idleSince{}, 0, nil)
	}
	if len(im.m) > maxIdleMarks {
		t.Errorf("%d marks kept, want at most %d", len(im.m), maxIdleMarks)
	}
	// A walk that found something due is not "nothing due", at any sequence.
	im.mark(k, 8, time.Time{}, idleSince{}, 0, []int64{5})
	if _, ok := im.nothingDue(k, 8, 0); ok {
		t.Error("a mark of what is due kept as nothing due")
	}
}

// TestAnIdleWalkHoldsPastCommitsThatOnlyAppend: a group with nothing due
// on a queue of many partitions keeps its walk's answer past commits that
// change nothing of that queue but add segments (pushes to it or to other
// queues, its own claims of what they brought), reading only the
// partitions written since; a commit that touches the queue otherwise (a
// seek) ends it, and so does age. At a million partitions every pop after
// any commit walked the queue: 3 s.
func TestAnIdleWalkHoldsPastCommitsThatOnlyAppend(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := openTestStore(t, clk)
	pushPartitions(t, s, "q", "p", 500, 1)
	idleAllGroup(t, s, "q", "g")
	q, err := getQueue(ctx, s.r, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	k := idleKey{q.ID, "g"}
	req := combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true}
	pop := func(step string, want int) {
		t.Helper()
		res, err := s.Pop(ctx, "", req)
		if err != nil || len(res.Messages) != want {
			t.Fatalf("%s: pop got %+v %v, want %d messages", step, res, err, want)
		}
	}
	walkedAt := func() time.Time {
		t.Helper()
		s.idle.mu.Lock()
		defer s.idle.mu.Unlock()
		mk, ok := s.idle.m[k]
		if !ok {
			t.Fatal("no idle mark kept")
		}
		return fromMicros(mk.at)
	}
	push := func(queue, partition string) {
		t.Helper()
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: queue, Partition: partition, Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
	}
	// leaseAndAck pops one message for g under a lease of at most batch
	// and acknowledges it.
	leaseAndAck := func(batch int) {
		t.Helper()
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: batch})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("lease: %+v %v", res, err)
		}
		m := res.Messages[0]
		if ack, err := s.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID,
			Group: "g", Status: combtype.AckCompleted}}); err != nil || len(ack) != 1 || !ack[0].Success {
			t.Fatalf("ack: %+v %v", ack, err)
		}
	}
	pop("the first walk", 0)
	t0 := walkedAt()
	steps := []struct {
		name   string
		event  func()
		got    int
		walked bool
	}{
		{"a push to another queue", func() { push("other", "x") }, 0, false},
		{"a push to the queue", func() { push("q", "p0000007") }, 1, false},
		{"the claim of it", func() {}, 0, false},
		{"a push to a partition of its own", func() { push("q", "new") }, 1, false},
		{"a batch leased, then acknowledged whole", func() {
			push("q", "p0000009")
			leaseAndAck(10)
		}, 0, false},
		{"a batch leased and acknowledged, with more behind it", func() {
			for range 3 {
				push("q", "p0000011")
			}
			leaseAndAck(1)
		}, 2, false},
		{"another group's pop", func() {
			if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "h", Batch: 5}); err != nil {
				t.Fatal(err)
			}
		}, 0, false},
		{"a seek of one partition", func() {
			off := int64(-1)
			if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Partition: "p0000100",
				Target: combtype.SeekTarget{Offset: &off}}); err != nil {
				t.Fatal(err)
			}
		}, 1, true},
	}
	for _, st := range steps {
		clk.Advance(time.Second)
		before := walkedAt()
		st.event()
		walks := s.stats.QueueWalks.Load()
		pop(st.name, st.got)
		// Neither the pop nor its claim walked the queue to find what a
		// push brought.
		if walked := s.stats.QueueWalks.Load() > walks; walked != st.walked {
			t.Fatalf("after %s the pop or its claim walked the queue: %v, want %v", st.name, walked, st.walked)
		}
		if st.got == 0 && walkedAt().Equal(before) == st.walked {
			t.Fatalf("after %s the mark was renewed: %v, want %v", st.name, !st.walked, st.walked)
		}
	}
	pop("after the seek's message", 0)
	t1 := walkedAt()
	if !t1.After(t0) {
		t.Fatal("the seek did not end the mark")
	}
	clk.Advance(maxAppendMarkAge)
	push("other", "x")
	pop("a minute on", 0)
	if !walkedAt().After(t1) {
		t.Fatal("a mark a minute old still held")
	}
}

// A walk that finds a few partitions due keeps them as its mark: the
// pops after it, and their claims, read those and what is written since,
// not the queue. When marks ran out, each walk under a steady trickle of
// pushes found something and left no mark, so every pop walked the queue
// and every claim walked it again inside the writer. A mark past half its
// age is renewed by one pop's walk while the others still read it.
func TestAWalkThatFindsAFewDueKeepsThemAsItsMark(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s := openTestStore(t, clk)
	s.seekChunk = 70
	seekQueue(t, s, "before", 300)
	drain(t, s, "g")
	walks := func() (int64, int64) { return s.stats.QueueWalks.Load(), s.stats.WriterWalks.Load() }
	pop := func(want int) {
		t.Helper()
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 1, Partitions: 1})
		if err != nil || len(res.Messages) != want {
			t.Fatalf("pop = %+v, %v; want %d messages", res, err, want)
		}
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p001", Payload: []byte("1")},
		{Queue: "q", Partition: "p002", Payload: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	s.idle.forgetAll() // no mark: the next pop walks
	q0, w0 := walks()
	pop(1)
	if q, w := walks(); q != q0+1 || w != w0 {
		t.Fatalf("the first pop made %d walks, %d in the writer; want 1 on a reader", q-q0, w-w0)
	}
	pop(1)
	pop(0)
	if q, w := walks(); q != q0+1 || w != w0 {
		t.Fatalf("the pops after it made %d walks, %d in the writer; want none", q-q0-1, w-w0)
	}
	other := func() { // a commit: the marks hold past it, not by its sequence
		t.Helper()
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "other", Payload: []byte("1")}}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(maxAppendMarkAge/2 + time.Second)
	var wide []combtype.PushItem // more due than a claim's share
	for i := 10; i < 30; i++ {
		wide = append(wide, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%03d", i), Payload: []byte("w")})
	}
	if _, err := s.Push(ctx, "", wide); err != nil {
		t.Fatal(err)
	}
	pop(1)
	other()
	pop(1)
	if q, w := walks(); q != q0+2 || w != w0 {
		t.Fatalf("past half its age: %d walks, %d in the writer; want one pop's on a reader", q-q0-1, w-w0)
	}
	clk.Advance(maxAppendMarkAge / 3) // past the first mark's age, not the second's
	other()
	pop(1)
	if q, _ := walks(); q != q0+2 {
		t.Fatalf("the renewed mark was not read: %d walks", q-q0-2)
	}
}

// A claim made for a parked pop on a large queue, with no mark to read,
// sends the pop to look again itself rather than walk the queue inside
// the writer; with a mark, it claims as before.
func TestAHandedClaimWithoutAMarkOnALargeQueueLooksAgain(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	s.seekChunk = 70
	seekQueue(t, s, "before", 300)
	drain(t, s, "g")
	for _, marked := range []bool{true, false} {
		if res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 1}); err != nil || len(res.Messages) != 0 {
			t.Fatalf("pop = %+v, %v", res, err)
		}
		if !marked {
			s.idle.forgetAll()
		}
		w0 := s.stats.WriterWalks.Load()
		changed, stop := s.Watch("", "q")
		p := s.Park("", &combtype.PopRequest{Queue: "q", Group: "g", Batch: 10}, changed, time.Minute)
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p005", Payload: []byte("1")}}); err != nil {
			t.Fatal(err)
		}
		res, claimed, err := p.Result(<-p.Done())
		stop()
		if err != nil || claimed != marked || (marked && len(res.Messages) != 1) {
			t.Fatalf("marked %v: %+v, claimed %v, %v", marked, res, claimed, err)
		}
		if w := s.stats.WriterWalks.Load(); w != w0 {
			t.Fatalf("marked %v: %d walks in the writer", marked, w-w0)
		}
		if !marked {
			if got := drain(t, s, "g"); len(got) != 1 {
				t.Fatalf("the pop looking again got %v", got)
			}
		} else if _, err := s.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: res.Messages[0].TxnID, PartitionID: res.Messages[0].PartitionID,
			LeaseID: res.LeaseID}}); err != nil {
			t.Fatal(err)
		}
	}
}

// One pop at a time renews a mark past half its age, however often the
// mark is renewed from the same walk meanwhile.
func TestOneWalkAtATimeRenewsAMark(t *testing.T) {
	var im idleMarks
	k := idleKey{1, "g"}
	at := micros(t0)
	half := maxAppendMarkAge.Microseconds() / 2
	im.mark(k, 2, time.Time{}, idleSince{}, at, nil)
	if _, _, ok, renew := im.appendsOnly(k, "q", idleSince{}, at+half-1, true); !ok || renew {
		t.Fatalf("before half its age: ok %v, renew %v", ok, renew)
	}
	if _, _, ok, renew := im.appendsOnly(k, "q", idleSince{}, at+half, true); ok || !renew {
		t.Fatalf("at half its age: ok %v, renew %v; want this pop to walk", ok, renew)
	}
	im.mark(k, 4, time.Time{}, idleSince{}, at, []int64{7}) // another pop renews it from the same walk
	if _, _, ok, renew := im.appendsOnly(k, "q", idleSince{}, at+half+1, true); !ok || renew {
		t.Fatalf("while the walk is under way: ok %v, renew %v; want the mark read", ok, renew)
	}
	if _, _, ok, _ := im.appendsOnly(k, "q", idleSince{}, at+half+1, false); !ok {
		t.Fatal("the writer's claims do not read the mark")
	}
	if _, _, ok, renew := im.appendsOnly(k, "q", idleSince{}, at+half+markRefreshRetry.Microseconds(), true); ok || !renew {
		t.Fatalf("a walk that never renewed it is given up after %v: ok %v, renew %v", markRefreshRetry, ok, renew)
	}
	if _, _, ok, _ := im.appendsOnly(k, "q", idleSince{}, at+2*half, false); ok {
		t.Fatal("read past its age")
	}
}
