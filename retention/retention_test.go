package retention_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

var t0 = time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC)

// fixture is a broker on a Manual clock whose retention runs only when the
// test sweeps.
type fixture struct {
	t     *testing.T
	b     *broker.Broker
	clock *clock.Manual
	ctx   context.Context
	rdb   *sql.DB // read-only, opened by db
}

// db is a read-only connection on the fixture's database file.
func (f *fixture) db() *sql.DB {
	if f.rdb == nil {
		f.rdb = combtest.ReadDB(f.t, f.b.DatabasePath())
	}
	return f.rdb
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clock.NewManual(t0)
	b := combtest.MustOpenBroker(t, combtest.Options{Clock: clk, Broker: func(o *broker.Options) {
		o.RetentionInterval = -1
		o.Logger = slog.New(slog.DiscardHandler)
	}})
	return &fixture{t: t, b: b, clock: clk, ctx: context.Background()}
}

func (f *fixture) configure(queue string, o combtype.QueueOptions) {
	f.t.Helper()
	if _, _, err := f.b.QueueConfigure(f.ctx, combtype.ConfigureRequest{Queue: queue, Options: o}); err != nil {
		f.t.Fatalf("configure: %v", err)
	}
}

// push appends one segment of n messages to queue/partition, with
// transaction ids prefix-0 .. prefix-(n-1).
func (f *fixture) push(queue, partition, prefix string, n int) []combtype.PushResult {
	f.t.Helper()
	items := make([]combtype.PushItem, n)
	for i := range items {
		items[i] = combtype.PushItem{Queue: queue, Partition: partition, TxnID: fmt.Sprintf("%s-%d", prefix, i),
			Payload: []byte(fmt.Sprintf(`{"p":%q,"i":%d}`, prefix, i))}
	}
	res, err := f.b.Push(f.ctx, items)
	if err != nil {
		f.t.Fatalf("push: %v", err)
	}
	return res
}

func (f *fixture) sweep() broker.RetentionReport {
	f.t.Helper()
	st, err := f.b.RetentionSweep(f.ctx)
	if err != nil {
		f.t.Fatalf("sweep: %v", err)
	}
	return st
}

// bases returns the base offsets of a partition's segments.
func (f *fixture) bases(queue, partition string) []int64 {
	f.t.Helper()
	rows, err := f.db().QueryContext(f.ctx, `SELECT s.base_offset FROM segments s
		JOIN partitions p ON p.id = s.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = ? AND p.name = ? ORDER BY s.base_offset`, queue, partition)
	if err != nil {
		f.t.Fatalf("list segments: %v", err)
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var b int64
		if err := rows.Scan(&b); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func (f *fixture) logStart(queue, partition string) int64 {
	f.t.Helper()
	var n int64
	if err := f.db().QueryRowContext(f.ctx, `SELECT p.log_start FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE q.name = ? AND p.name = ?`, queue, partition).Scan(&n); err != nil {
		f.t.Fatalf("read log_start: %v", err)
	}
	return n
}

func (f *fixture) count(query string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.db().QueryRowContext(f.ctx, query, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (f *fixture) pop(queue, group string, batch int) *combtype.PopResult {
	f.t.Helper()
	res, err := f.b.Pop(f.ctx, combtype.PopRequest{Queue: queue, Group: group, Batch: batch})
	if err != nil {
		f.t.Fatalf("pop: %v", err)
	}
	return res
}

func equal(a, b []int64) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func retained(seconds int64) combtype.QueueOptions {
	o := combtype.DefaultQueueOptions()
	o.RetentionEnabled, o.RetentionSeconds = true, seconds
	return o
}

func TestSweepDeletesExactlyTheSegmentsPastTheirAge(t *testing.T) {
	f := newFixture(t)
	f.configure("q", retained(60))
	f.configure("kept", combtype.DefaultQueueOptions()) // no retention: untouched
	f.push("q", "", "a", 3)                             // offsets 0-2 at t0
	f.push("kept", "", "k", 2)
	f.clock.Advance(30 * time.Second)
	f.push("q", "", "b", 2) // 3-4 at t0+30s
	f.clock.Advance(30 * time.Second)
	f.push("q", "", "c", 1) // 5 at t0+60s

	// At t0+90s the cutoff is t0+30s: only the first segment is older.
	f.clock.Set(t0.Add(90 * time.Second))
	st := f.sweep()
	if got, want := f.bases("q", "Default"), []int64{3, 5}; !equal(got, want) {
		t.Fatalf("after first sweep segments %v, want %v", got, want)
	}
	if st.Segments != 1 || st.Frames != 3 || st.Partitions != 1 {
		t.Fatalf("stats %+v, want 1 segment, 3 messages, 1 partition", st)
	}
	if got := f.logStart("q", "Default"); got != 3 {
		t.Fatalf("log_start %d, want 3", got)
	}
	// A segment exactly at the cutoff is not older than it.
	f.clock.Set(t0.Add(90*time.Second + 0))
	if st := f.sweep(); st.Segments != 0 {
		t.Fatalf("second sweep at the same time deleted %d segments", st.Segments)
	}
	f.clock.Set(t0.Add(121 * time.Second))
	f.sweep()
	if got, want := f.bases("q", "Default"), []int64{}; !equal(got, want) {
		t.Fatalf("after last sweep segments %v, want none", got)
	}
	if got := f.logStart("q", "Default"); got != 6 {
		t.Fatalf("log_start %d, want last_offset+1 = 6", got)
	}
	if got := f.bases("kept", "Default"); !equal(got, []int64{0}) {
		t.Fatalf("queue without retention lost segments: %v", got)
	}
	// The dedup keys went with their frames: the ids can be pushed again,
	// and the new messages continue the offsets.
	if n := f.count(`SELECT COUNT(*) FROM txids t JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = 'q'`); n != 0 {
		t.Fatalf("%d dedup keys left for evicted frames", n)
	}
	res := f.push("q", "", "a", 1)
	if res[0].Status != combtype.StatusQueued || res[0].Offset != 6 {
		t.Fatalf("re-push of an evicted id: %+v, want queued at offset 6", res[0])
	}
	if n := f.count(`SELECT COUNT(*) FROM txids t JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = 'kept'`); n != 2 {
		t.Fatalf("queue without retention has %d dedup keys, want 2", n)
	}
}

func TestSweepNeverTouchesTheDeadLetterTable(t *testing.T) {
	f := newFixture(t)
	o := retained(10)
	o.RetryLimit = 0
	f.configure("q", o)
	f.push("q", "", "m", 2)
	res := f.pop("q", "", 2)
	if len(res.Messages) != 2 {
		t.Fatalf("popped %d, want 2", len(res.Messages))
	}
	acks, err := f.b.Ack(f.ctx, []combtype.AckItem{
		{TxnID: "m-0", PartitionID: res.PartitionID, LeaseID: res.LeaseID, Status: combtype.AckFailed, Error: "boom"},
		{TxnID: "m-1", PartitionID: res.PartitionID, LeaseID: res.LeaseID, Status: combtype.AckCompleted},
	})
	if err != nil || !acks[0].DLQ {
		t.Fatalf("ack: %v %+v, want m-0 dead-lettered", err, acks)
	}
	f.clock.Advance(time.Hour)
	if st := f.sweep(); st.Segments != 1 {
		t.Fatalf("sweep deleted %d segments, want 1", st.Segments)
	}
	if n := f.count(`SELECT COUNT(*) FROM dlq WHERE txn_id = 'm-0' AND error_message = 'boom'`); n != 1 {
		t.Fatalf("dead-letter rows after sweep: %d, want 1", n)
	}
}

func TestSweepKeepsTheSegmentALiveLeaseIsReading(t *testing.T) {
	f := newFixture(t)
	f.configure("q", retained(60))
	f.push("q", "", "a", 2) // 0-1
	f.push("q", "", "b", 2) // 2-3
	f.push("q", "", "c", 2) // 4-5
	// A worker consumes the first segment, then takes a batch that starts
	// at the second.
	ack := func(res *combtype.PopResult) {
		t.Helper()
		var items []combtype.AckItem
		for _, m := range res.Messages {
			items = append(items, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Group: "w"})
		}
		acks, err := f.b.Ack(f.ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acks {
			if !a.Success {
				t.Fatalf("ack %+v", a)
			}
		}
	}
	ack(f.pop("q", "w", 2))
	held := f.pop("q", "w", 3) // offsets 2-4, leased for 300 s
	if len(held.Messages) != 3 || held.Messages[0].Offset != 2 {
		t.Fatalf("second batch %+v", held.Messages)
	}
	// Everything is past retention; only the lease protects anything.
	f.clock.Advance(2 * time.Minute)
	f.sweep()
	if got, want := f.bases("q", "Default"), []int64{2, 4}; !equal(got, want) {
		t.Fatalf("segments %v, want %v: the leased one and what follows it stay", got, want)
	}
	// The worker finishes its batch: every ack still finds its message.
	ack(held)
	f.sweep()
	if got := f.bases("q", "Default"); len(got) != 0 {
		t.Fatalf("segments %v after the lease ended, want none", got)
	}
	// An expired lease protects nothing.
	f.push("q", "", "d", 1)
	if res := f.pop("q", "w", 1); len(res.Messages) != 1 {
		t.Fatal("nothing to lease")
	}
	f.clock.Advance(301 * time.Second)
	f.sweep()
	if got := f.bases("q", "Default"); len(got) != 0 {
		t.Fatalf("segments %v under an expired lease, want none", got)
	}
}

func TestCursorBelowTheWatermarkResumesAtLogStart(t *testing.T) {
	f := newFixture(t)
	f.configure("q", retained(60))
	f.push("q", "", "a", 2)
	if res := f.pop("q", "late", 1); len(res.Messages) != 1 { // subscribes "late" at offset -1
		t.Fatalf("first pop %d messages", len(res.Messages))
	} else if _, err := f.b.Ack(f.ctx, []combtype.AckItem{{TxnID: res.Messages[0].TxnID,
		PartitionID: res.PartitionID, LeaseID: res.LeaseID, Status: combtype.AckRetry, Group: "late"}}); err != nil {
		t.Fatal(err) // give the batch back: the cursor stays at -1
	}
	f.clock.Advance(time.Minute)
	f.push("q", "", "b", 2) // 2-3
	f.clock.Advance(30 * time.Second)
	f.sweep() // deletes 0-1
	if got := f.logStart("q", "Default"); got != 2 {
		t.Fatalf("log_start %d, want 2", got)
	}
	res := f.pop("q", "late", 10)
	if len(res.Messages) != 2 || res.Messages[0].TxnID != "b-0" || res.Messages[0].Offset != 2 {
		t.Fatalf("cursor below the watermark got %+v, want b-0, b-1 from offset 2", res.Messages)
	}
}

func TestCompletedRetentionWaitsForEveryGroup(t *testing.T) {
	f := newFixture(t)
	o := combtype.DefaultQueueOptions()
	o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60
	f.configure("q", o)
	f.push("q", "", "a", 2) // 0-1
	f.push("q", "", "b", 2) // 2-3
	consume := func(group, partition string, n int) {
		t.Helper()
		res, err := f.b.Pop(f.ctx, combtype.PopRequest{Queue: "q", Partition: partition, Group: group, Batch: n, AutoAck: true})
		if err != nil || len(res.Messages) != n {
			t.Fatalf("%s consumed %d (%v), want %d", group, len(res.Messages), err, n)
		}
	}
	f.clock.Advance(2 * time.Minute)
	f.sweep()
	if got := f.bases("q", "Default"); !equal(got, []int64{0, 2}) {
		t.Fatalf("nobody consumed, yet segments are %v", got)
	}
	consume("g1", "", 4)
	consume("g2", "", 2)
	f.sweep()
	if got, want := f.bases("q", "Default"), []int64{2}; !equal(got, want) {
		t.Fatalf("segments %v, want %v: g2 has not consumed the second one", got, want)
	}
	consume("g2", "", 2)
	f.sweep()
	if got := f.bases("q", "Default"); len(got) != 0 {
		t.Fatalf("segments %v after every group consumed them, want none", got)
	}

	// g3 subscribes to the queue; a partition created later is held until
	// g3 has consumed it too, although it has no cursor there yet.
	if res := f.pop("q", "g3", 1); len(res.Messages) != 0 {
		t.Fatalf("g3 got %d messages from an empty queue", len(res.Messages))
	}
	f.push("q", "late", "c", 1)
	consume("g1", "late", 1)
	consume("g2", "late", 1)
	f.clock.Advance(2 * time.Minute)
	f.sweep()
	if got := f.bases("q", "late"); !equal(got, []int64{0}) {
		t.Fatalf("late segments %v, want [0]: g3 has not consumed it", got)
	}
	// Recent data is kept even when everyone consumed it.
	f.push("q", "late", "d", 1)
	consume("g3", "late", 2)
	consume("g1", "late", 1)
	consume("g2", "late", 1)
	f.sweep()
	if got := f.bases("q", "late"); !equal(got, []int64{1}) {
		t.Fatalf("late segments %v, want [1]: consumed by all but younger than 60 s", got)
	}
}

func TestMaxWaitTimeAppliesWithoutRetentionEnabled(t *testing.T) {
	f := newFixture(t)
	o := combtype.DefaultQueueOptions()
	o.MaxWaitTimeSeconds = 30
	f.configure("q", o)
	f.push("q", "", "a", 1)
	f.clock.Advance(20 * time.Second)
	f.push("q", "", "b", 1)
	f.clock.Advance(20 * time.Second) // a waited 40 s, b 20 s
	f.sweep()
	if got, want := f.bases("q", "Default"), []int64{1}; !equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	res := f.pop("q", "", 10)
	if len(res.Messages) != 1 || res.Messages[0].TxnID != "b-0" {
		t.Fatalf("popped %+v, want only b-0", res.Messages)
	}
}

func TestMaxBytesEvictsTheOldestSegmentsOfTheQueue(t *testing.T) {
	f := newFixture(t)
	o := combtype.DefaultQueueOptions()
	f.configure("q", o)
	// Incompressible-enough payloads so each segment has a known size.
	seg := func(partition, prefix string) {
		items := []combtype.PushItem{{Queue: "q", Partition: partition, TxnID: prefix,
			Payload: []byte(fmt.Sprintf(`{"r":%q}`, randomHex(2000)))}}
		if _, err := f.b.Push(f.ctx, items); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Second)
	}
	seg("p1", "a") // oldest
	seg("p2", "b")
	seg("p1", "c")
	seg("p2", "d")
	var total, oldestTwo int64
	total = f.count(`SELECT SUM(length(data)) FROM segments`)
	oldestTwo = f.count(`SELECT SUM(length(data)) FROM (SELECT data FROM segments ORDER BY created_at LIMIT 2)`)
	// Room for the two newest segments only.
	o.MaxBytes = total - oldestTwo
	f.configure("q", o)
	st := f.sweep()
	if st.Segments != 2 {
		t.Fatalf("evicted %d segments, want 2", st.Segments)
	}
	if got := f.bases("q", "p1"); !equal(got, []int64{1}) {
		t.Fatalf("p1 segments %v, want [1]", got)
	}
	if got := f.bases("q", "p2"); !equal(got, []int64{1}) {
		t.Fatalf("p2 segments %v, want [1]", got)
	}
	if left := f.count(`SELECT SUM(length(data)) FROM segments`); left > o.MaxBytes {
		t.Fatalf("%d bytes left, bound %d", left, o.MaxBytes)
	}
	// A live lease holds its segment even against the size bound.
	held := f.pop("q", "", 1)
	if len(held.Messages) != 1 {
		t.Fatal("nothing to lease")
	}
	o.MaxBytes = 1
	f.configure("q", o)
	f.sweep()
	if n := f.count(`SELECT COUNT(*) FROM segments`); n != 1 {
		t.Fatalf("%d segments left, want the leased one", n)
	}
}

func TestIncrementalVacuumShrinksTheFile(t *testing.T) {
	f := newFixture(t)
	var mode int
	if err := f.db().QueryRowContext(f.ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum = %d (%v), want 2 (incremental)", mode, err)
	}
	f.configure("q", retained(60))
	for i := range 40 {
		items := make([]combtype.PushItem, 20)
		for j := range items {
			items[j] = combtype.PushItem{Queue: "q", Payload: []byte(fmt.Sprintf(`{"r":%q}`, randomHex(4000)))}
		}
		if _, err := f.b.Push(f.ctx, items); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	pages := func() (count, free int64) {
		return f.count(`PRAGMA page_count`), f.count(`PRAGMA freelist_count`)
	}
	before, _ := pages()
	f.clock.Advance(2 * time.Minute)
	st := f.sweep()
	after, free := pages()
	if st.Segments != 40 || st.FreedPages == 0 {
		t.Fatalf("sweep %+v, want 40 segments and freed pages", st)
	}
	if free != 0 {
		t.Fatalf("freelist holds %d pages after the sweep, want 0", free)
	}
	if after >= before/4 {
		t.Fatalf("page_count %d -> %d: the file did not shrink", before, after)
	}
	// The file itself shrinks at the next checkpoint; Close checkpoints.
	info, err := os.Stat(f.b.DatabasePath())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pages %d -> %d, freed %d, file %d bytes before checkpoint", before, after, st.FreedPages, info.Size())
}

func TestExpiredLeaseWakesAParkedPop(t *testing.T) {
	f := newFixture(t)
	f.configure("q", combtype.DefaultQueueOptions())
	f.push("q", "", "a", 1)
	if res := f.pop("q", "", 1); len(res.Messages) != 1 {
		t.Fatal("nothing to lease")
	}
	got := make(chan *combtype.PopResult, 1)
	go func() {
		res, err := f.b.Pop(f.ctx, combtype.PopRequest{Queue: "q", Batch: 1, Wait: true, Timeout: time.Minute})
		if err != nil {
			t.Errorf("parked pop: %v", err)
		}
		got <- res
	}()
	combtest.CheckFor(t, 5*time.Second, func() error {
		if f.b.Parked() != 1 {
			return fmt.Errorf("%d pops parked", f.b.Parked())
		}
		return nil
	})
	// The lease (300 s) expires on the manual clock; the parked pop's own
	// timer is on the wall clock and minutes away, so only the wake can
	// bring it back in time.
	f.clock.Advance(301 * time.Second)
	rep, err := f.b.RetentionSweep(f.ctx)
	if err != nil || rep.LeaseWakes != 1 {
		t.Fatalf("woke %d queues (%v), want 1", rep.LeaseWakes, err)
	}
	select {
	case res := <-got:
		if len(res.Messages) != 1 || res.Messages[0].TxnID != "a-0" {
			t.Fatalf("woken pop got %+v, want the redelivered a-0", res.Messages)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked pop was not woken by the lease expiry")
	}
	// The same expiry is not reported twice.
	f.clock.Advance(time.Second)
	if rep, err := f.b.RetentionSweep(f.ctx); err != nil || rep.LeaseWakes != 0 {
		t.Fatalf("second check woke %d (%v), want 0", rep.LeaseWakes, err)
	}
}

func randomHex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	x := uint64(time.Now().UnixNano()) | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = digits[x&15]
	}
	return string(b)
}

func TestSweepDropsTheTracesOfEvictedMessages(t *testing.T) {
	f := newFixture(t)
	f.configure("q", retained(60))
	old := f.push("q", "", "old", 1)
	f.clock.Advance(time.Minute)
	young := f.push("q", "", "young", 1)
	for _, r := range []combtype.PushResult{old[0], young[0]} {
		if _, err := f.b.TraceRecord(f.ctx, combtype.TraceInput{PartitionID: r.PartitionID, TxnID: r.TxnID,
			Names: []string{"flow"}, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(30 * time.Second)
	if st := f.sweep(); st.Segments != 1 {
		t.Fatalf("sweep deleted %d segments, want 1", st.Segments)
	}
	if n := f.count(`SELECT COUNT(*) FROM traces WHERE txn_id = 'old-0'`); n != 0 {
		t.Fatalf("%d traces left for an evicted message", n)
	}
	traces, total, err := f.b.TraceListByName(f.ctx, "flow", combtype.Page{Limit: 10})
	if err != nil || total != 1 || len(traces) != 1 || traces[0].TxnID != "young-0" {
		t.Fatalf("traces by name after the sweep: %+v total %d (%v), want young-0 only", traces, total, err)
	}
}

// A message of many traces goes in one sweep, its traces a bounded batch
// a write ahead of it: the sweep goes on with a partition whose write
// deleted traces and no segment.
func TestOneSweepEvictsAMessageOfManyTraces(t *testing.T) {
	f := newFixture(t)
	f.configure("q", retained(60))
	r := f.push("q", "", "old", 1)[0]
	combtest.SQLite3Exec(t, f.b.DatabasePath(), fmt.Sprintf(`PRAGMA busy_timeout = 10000;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9000)
		INSERT INTO traces (uuid, partition_uuid, txn_id, group_name, event_type, data, created_at)
		SELECT printf('t-%%d', i), '%s', '%s', 'g', 'info', '{}', 1 FROM n;`, r.PartitionID, r.TxnID))
	f.clock.Advance(2 * time.Minute)
	if st := f.sweep(); st.Segments != 1 {
		t.Fatalf("sweep deleted %d segments, want 1", st.Segments)
	}
	if n := f.count(`SELECT COUNT(*) FROM traces`); n != 0 {
		t.Fatalf("%d traces left for an evicted message", n)
	}
}

func TestTimeRetentionKeepsWhatALiveSnapshotNeeds(t *testing.T) {
	f := newFixture(t)
	f.configure("q", retained(60))
	f.push("q", "", "a", 2) // 0-1
	f.push("q", "", "b", 2) // 2-3
	f.push("q", "", "c", 2) // 4-5
	if res, err := f.b.Pop(f.ctx, combtype.PopRequest{Queue: "q", Group: "g", Batch: 2, AutoAck: true}); err != nil || len(res.Messages) != 2 {
		t.Fatalf("consume: %v", err)
	}
	// g's position (committed 1) is captured: replaying it needs offset 2 on.
	if _, err := f.b.SnapshotCreate(f.ctx, combtype.CreateSnapshotRequest{Name: "before-deploy", Group: "g", Queue: "q",
		TTL: time.Hour}); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	f.clock.Advance(2 * time.Minute)
	f.sweep()
	if got, want := f.bases("q", "Default"), []int64{2, 4}; !equal(got, want) {
		t.Fatalf("segments %v, want %v kept for the snapshot", got, want)
	}
	f.clock.Advance(time.Hour)
	st := f.sweep()
	if st.Snapshots != 1 || st.Segments != 2 {
		t.Fatalf("sweep after the snapshot expired: %+v, want 1 snapshot and 2 segments deleted", st)
	}

	// A size bound is not held back by snapshots.
	o := combtype.DefaultQueueOptions()
	o.MaxBytes = 1
	f.configure("small", o)
	f.push("small", "", "x", 1)
	f.push("small", "", "y", 1)
	if _, err := f.b.SnapshotCreate(f.ctx, combtype.CreateSnapshotRequest{Name: "pin", Queue: "small", TTL: time.Hour}); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	f.sweep()
	if got := f.bases("small", "Default"); len(got) != 0 {
		t.Fatalf("segments %v left over maxBytes, want none", got)
	}
}

func TestExpiredSnapshotsAreDeletedAtMostHourly(t *testing.T) {
	f := newFixture(t)
	f.push("q", "", "a", 1)
	if st := f.sweep(); st.Snapshots != 0 {
		t.Fatalf("first sweep deleted %d snapshots", st.Snapshots)
	}
	if _, err := f.b.SnapshotCreate(f.ctx, combtype.CreateSnapshotRequest{Name: "short", Queue: "q", TTL: time.Minute}); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	// Expired, but the hourly sweep of snapshots ran less than an hour ago.
	f.clock.Advance(30 * time.Minute)
	if st := f.sweep(); st.Snapshots != 0 {
		t.Fatalf("sweep 30 min after the last snapshot sweep deleted %d snapshots", st.Snapshots)
	}
	f.clock.Advance(31 * time.Minute)
	if st := f.sweep(); st.Snapshots != 1 {
		t.Fatalf("sweep an hour after the last snapshot sweep deleted %d snapshots, want 1", st.Snapshots)
	}
}

// What retention removed is counted the same by every view of a queue:
// the listing's totals (QueueList, QueuePage, which the status and
// retention analytics answer from) and the queue detail (QueueStats).
func TestEveryViewOfAQueueCountsWhatRetentionEvicted(t *testing.T) {
	f := newFixture(t)
	f.configure("q", retained(60))
	f.push("q", "p1", "a", 3) // p1 0-2 at t0
	f.push("q", "p2", "b", 4) // p2 0-3 at t0
	f.clock.Advance(30 * time.Second)
	f.push("q", "p1", "c", 2) // p1 3-4 at t0+30s
	f.clock.Set(t0.Add(90 * time.Second))
	f.sweep()
	want := f.logStart("q", "p1") + f.logStart("q", "p2")
	if want != 7 {
		t.Fatalf("log starts sum to %d, want 7 (3 of p1, 4 of p2)", want)
	}
	list, err := f.b.QueueList(f.ctx, combtype.QueueFilter{})
	if err != nil || len(list) != 1 || list[0].Evicted != want || list[0].Counts.Total != 2 || list[0].PartitionCount != 3 {
		t.Fatalf("QueueList: %v %+v (3 partitions: Default, made by configure, p1, p2)", err, list)
	}
	page, _, err := f.b.QueuePage(f.ctx, combtype.QueueFilter{Name: "q", Limit: 1})
	if err != nil || len(page) != 1 || page[0].Evicted != want {
		t.Fatalf("QueuePage: %v %+v", err, page)
	}
	qs, err := f.b.QueueStats(f.ctx, "q")
	if err != nil || qs.Evicted != want || qs.Counts.Total != 2 {
		t.Fatalf("QueueStats: %v %+v", err, qs)
	}
}
