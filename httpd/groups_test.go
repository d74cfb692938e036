package httpd_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// replay is a server on a manual clock with helpers for the replay routes.
type replay struct {
	*combtest.Server
	t   *testing.T
	clk *clock.Manual
}

var replayEpoch = time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)

func newReplay(t *testing.T) *replay {
	t.Helper()
	clk := clock.NewManual(replayEpoch)
	return &replay{Server: combtest.MustServer(t, combtest.Options{Clock: clk}), t: t, clk: clk}
}

// segment pushes n messages to queue/partition in one request, so they are
// committed as one segment stamped with the clock's time. Payloads are
// {"n": first..first+n-1}.
func (r *replay) segment(queue, partition string, first, n int) {
	r.t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "partition": partition, "payload": map[string]any{"n": first + i},
			"transactionId": fmt.Sprintf("%s-%s-%d", queue, partition, first+i)}
	}
	r.Push(items...)
}

// popGroup pops up to batch messages of queue for group ("" = queue mode)
// without acking them.
func (r *replay) popGroup(queue, group string, batch int) combtest.PopReply {
	r.t.Helper()
	q := url.Values{"batch": {fmt.Sprint(batch)}}
	if group != "" {
		q.Set("consumerGroup", group)
	}
	return r.Pop("/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + q.Encode())
}

// drain pops and acks everything group can get from queue and returns the
// payload numbers in delivery order.
func (r *replay) drain(queue, group string) []int {
	r.t.Helper()
	var got []int
	for {
		p := r.popGroup(queue, group, 1000)
		if p.Status == http.StatusNoContent {
			return got
		}
		acks := make([]map[string]any, len(p.Messages))
		for i, m := range p.Messages {
			got = append(got, payloadN(r.t, m))
			acks[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID,
				"status": "completed"}
		}
		body := map[string]any{"acknowledgments": acks}
		if group != "" {
			body["consumerGroup"] = group
		}
		if a := r.Do("POST", "/api/v1/ack/batch", body); a.Status != http.StatusOK {
			r.t.Fatalf("ack batch: %d %s", a.Status, a.Body)
		}
	}
}

func payloadN(t *testing.T, m combtest.PopMessage) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(string(m.Data), `{"n":%d}`, &n); err != nil {
		t.Fatalf("payload %s: %v", m.Data, err)
	}
	return n
}

func ints(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (r *replay) seekPath(group, queue string) string {
	return "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queue) + "/seek"
}

func (r *replay) partitionSeekPath(group, queue, partition string) string {
	return "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queue) +
		"/partitions/" + url.PathEscape(partition) + "/seek"
}

// seek POSTs body to the per-queue seek route and requires status.
func (r *replay) seek(group, queue string, body any, status int) map[string]any {
	r.t.Helper()
	resp := r.Do("POST", r.seekPath(group, queue), body)
	if resp.Status != status {
		r.t.Fatalf("seek %s/%s %v: %d %s, want %d", group, queue, body, resp.Status, resp.Body, status)
	}
	return resp.Map(r.t)
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// db opens a second connection on the server's database file, for what no
// route can do yet (retention moving the watermark).
func (r *replay) db() *sql.DB {
	r.t.Helper()
	db, err := sql.Open("sqlite", "file:"+r.Broker.DatabasePath()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { db.Close() })
	return db
}

// evictBelow plays retention: it deletes the segments of queue/partition
// whose frames all lie below offset and moves log_start to offset, which
// must be a segment boundary.
func (r *replay) evictBelow(queue, partition string, offset int64) {
	r.t.Helper()
	db := r.db()
	tx, err := db.Begin()
	if err != nil {
		r.t.Fatal(err)
	}
	defer tx.Rollback()
	var pid int64
	if err := tx.QueryRow(`SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.name = ? AND p.name = ?`,
		queue, partition).Scan(&pid); err != nil {
		r.t.Fatalf("find partition: %v", err)
	}
	if _, err := tx.Exec(`DELETE FROM segments WHERE partition_id = ? AND base_offset < ?`, pid, offset); err != nil {
		r.t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE partitions SET log_start = ? WHERE id = ?`, offset, pid); err != nil {
		r.t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *replay) committed(queue, partition, group string) int64 {
	r.t.Helper()
	var c int64
	err := r.db().QueryRow(`SELECT c.committed FROM cursors c JOIN partitions p ON p.id = c.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = ? AND p.name = ? AND c.group_name = ?`, queue, partition, group).Scan(&c)
	if err != nil {
		r.t.Fatalf("committed of %s/%s/%s: %v", queue, partition, group, err)
	}
	return c
}

// threeSegments pushes offsets 0-4 at 10:00, 5-9 at 10:05 and 10-14 at 10:10.
func (r *replay) threeSegments(queue string) {
	r.t.Helper()
	for i := range 3 {
		r.clk.Set(replayEpoch.Add(time.Duration(i) * 5 * time.Minute))
		r.segment(queue, "Default", i*5, 5)
	}
	r.clk.Set(replayEpoch.Add(15 * time.Minute))
}

// --- seek ----------------------------------------------------------------

func TestSeekToTimestampLandsOnTheSegmentCommittedAtOrAfterIt(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("orders")
	if got := r.drain("orders", "billing"); !sameInts(got, ints(0, 14)) {
		t.Fatalf("first pass = %v", got)
	}
	body := r.seek("billing", "orders", map[string]any{"timestamp": ts(replayEpoch.Add(5 * time.Minute))}, http.StatusOK)
	if body["success"] != true || body["consumerGroup"] != "billing" || body["queueName"] != "orders" ||
		body["seekToEnd"] != false || body["targetTimestamp"] != "2026-07-30T10:05:00.000Z" || body["partitionsUpdated"] != 1.0 {
		t.Fatalf("seek body = %v", body)
	}
	parts := body["partitions"].([]any)
	p0 := parts[0].(map[string]any)
	if p0["partition"] != "Default" || p0["from"] != 14.0 || p0["to"] != 4.0 || p0["redeliver"] != 10.0 || p0["skip"] != 0.0 ||
		p0["clamped"] != false || p0["overshootBound"] != 4.0 {
		t.Fatalf("partition detail = %v", p0)
	}
	// Delivery resumes at the first frame of the 10:05 segment: committed = base_offset - 1.
	if got := r.drain("orders", "billing"); !sameInts(got, ints(5, 14)) {
		t.Fatalf("replay from 10:05 = %v, want 5..14", got)
	}
	// A time inside the gap between two segments lands on the next one.
	r.seek("billing", "orders", map[string]any{"timestamp": ts(replayEpoch.Add(7 * time.Minute))}, http.StatusOK)
	if got := r.drain("orders", "billing"); !sameInts(got, ints(10, 14)) {
		t.Fatalf("replay from 10:07 = %v, want 10..14", got)
	}
}

func TestTimestampSeekOnlyLandsOnSegmentBoundaries(t *testing.T) {
	r := newReplay(t)
	sizes := []int{3, 7, 1, 4}
	bases := map[int64]bool{}
	next := 0
	for i, n := range sizes {
		r.clk.Set(replayEpoch.Add(time.Duration(i) * time.Minute))
		bases[int64(next)-1] = true
		r.segment("q", "Default", next, n)
		next += n
	}
	last := int64(next - 1)
	// Sweep a time across and beyond the log in 10 s steps.
	for d := -time.Minute; d <= 5*time.Minute; d += 10 * time.Second {
		at := replayEpoch.Add(d)
		body := r.seek("g", "q", map[string]any{"timestamp": ts(at)}, http.StatusOK)
		to := int64(body["partitions"].([]any)[0].(map[string]any)["to"].(float64))
		if !bases[to] && to != last {
			t.Fatalf("seek to %v landed on committed %d, inside a segment", at, to)
		}
		if d > 3*time.Minute && to != last {
			t.Fatalf("seek to %v, newer than every segment, landed on %d, want last offset %d", at, to, last)
		}
	}
}

func TestTimestampSeekOvershootIsBoundedByOneSegment(t *testing.T) {
	r := newReplay(t)
	// Three pushes to one partition: the second is one fused segment of 8 frames.
	r.segment("q", "Default", 0, 2)
	r.clk.Advance(time.Minute)
	r.segment("q", "Default", 2, 8)
	r.clk.Advance(time.Minute)
	r.segment("q", "Default", 10, 2)
	r.drain("q", "g")
	// Any instant inside the second segment's minute resolves to its start:
	// the whole fused batch is redelivered, never part of it.
	at := replayEpoch.Add(30 * time.Second)
	dry := r.seek("g", "q", map[string]any{"timestamp": ts(at), "dryRun": true}, http.StatusOK)
	p := dry["partitions"].([]any)[0].(map[string]any)
	if p["to"] != 1.0 || p["overshootBound"] != 7.0 || p["redeliver"] != 10.0 || dry["dryRun"] != true {
		t.Fatalf("dry run = %v", dry)
	}
	r.seek("g", "q", map[string]any{"timestamp": ts(at)}, http.StatusOK)
	p2 := r.popGroup("q", "g", 100)
	if len(p2.Messages) != 10 || payloadN(t, p2.Messages[0]) != 2 {
		t.Fatalf("replay = %d messages from %d", len(p2.Messages), payloadN(t, p2.Messages[0]))
	}
	// Exact with respect to the timestamps a consumer can observe: every
	// frame reports its segment's commit time, and none is before the seek time.
	for _, m := range p2.Messages {
		c, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
		if err != nil {
			t.Fatal(err)
		}
		if c.Before(at) {
			t.Fatalf("message %s committed at %v, before the seek time %v", m.TransactionID, c, at)
		}
	}
}

func TestSeekToEndSkipsTheBacklog(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	body := r.seek("g", "q", map[string]any{"toEnd": true}, http.StatusOK)
	if body["seekToEnd"] != true || body["targetTimestamp"] != nil || body["partitionsUpdated"] != 1.0 {
		t.Fatalf("seek body = %v", body)
	}
	if p := body["partitions"].([]any)[0].(map[string]any); p["to"] != 14.0 || p["skip"] != 15.0 || p["created"] != true {
		t.Fatalf("partition detail = %v", p)
	}
	if p := r.popGroup("q", "g", 100); p.Status != http.StatusNoContent {
		t.Fatalf("pop after seek to end = %d messages", len(p.Messages))
	}
	r.segment("q", "Default", 15, 2)
	if got := r.drain("q", "g"); !sameInts(got, []int{15, 16}) {
		t.Fatalf("after a new push = %v", got)
	}
}

func TestSeekToAFutureTimestampActsAsToEnd(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	body := r.seek("g", "q", map[string]any{"timestamp": ts(replayEpoch.Add(24 * time.Hour))}, http.StatusOK)
	if p := body["partitions"].([]any)[0].(map[string]any); p["to"] != 14.0 {
		t.Fatalf("partition detail = %v", p)
	}
	if p := r.popGroup("q", "g", 100); p.Status != http.StatusNoContent {
		t.Fatalf("pop after future seek = %d messages", len(p.Messages))
	}
}

func TestSeekOlderThanRetentionClampsToTheWatermark(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	r.drain("q", "g")
	r.evictBelow("q", "Default", 5) // retention removed the 10:00 segment

	body := r.seek("g", "q", map[string]any{"timestamp": "2020-01-01T00:00:00Z"}, http.StatusOK)
	p := body["partitions"].([]any)[0].(map[string]any)
	if body["success"] != true || body["clamped"] != true || body["framesEvicted"] != 5.0 ||
		p["to"] != 4.0 || p["clamped"] != true || p["framesEvicted"] != 5.0 {
		t.Fatalf("clamped seek = %v", body)
	}
	// Everything still stored, and nothing else: no error for the lost part.
	if got := r.drain("q", "g"); !sameInts(got, ints(5, 14)) {
		t.Fatalf("replay = %v, want 5..14", got)
	}
	// A time that resolves above the watermark is not clamped.
	body = r.seek("g", "q", map[string]any{"timestamp": ts(replayEpoch.Add(9 * time.Minute))}, http.StatusOK)
	if body["clamped"] != false || body["framesEvicted"] != 0.0 {
		t.Fatalf("unclamped seek = %v", body)
	}
	// An exact offset below the watermark is refused, not clamped.
	resp := r.Do("POST", r.seekPath("g", "q"), map[string]any{"offset": 2})
	if resp.Status != http.StatusBadRequest || !strings.Contains(resp.Map(t)["error"].(string), "outside the retained range") {
		t.Fatalf("offset below the watermark = %d %s", resp.Status, resp.Body)
	}
}

func TestCursorBelowTheWatermarkResumesAtTheNextStoredOffset(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	r.seek("g", "q", map[string]any{"offset": -1}, http.StatusOK)
	r.evictBelow("q", "Default", 10)
	if got := r.drain("q", "g"); !sameInts(got, ints(10, 14)) {
		t.Fatalf("resume = %v", got)
	}
}

func TestSeekReleasesTheLeaseAndResetsRetries(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	first := r.popGroup("q", "g", 5)
	if len(first.Messages) != 5 {
		t.Fatalf("first pop = %d", len(first.Messages))
	}
	// One failed round: the batch comes back with retryCount 1.
	if a := r.Ack(first.Messages[0], "failed", "g"); a["success"] != true {
		t.Fatalf("nack = %v", a)
	}
	held := r.popGroup("q", "g", 5)
	if len(held.Messages) != 5 || held.Messages[0].RetryCount != 1 {
		t.Fatalf("redelivery = %+v", held)
	}
	// The batch is leased for 300 s: nothing more for this group.
	if p := r.popGroup("q", "g", 5); p.Status != http.StatusNoContent {
		t.Fatalf("pop while leased = %d", p.Status)
	}
	r.seek("g", "q", map[string]any{"timestamp": ts(replayEpoch)}, http.StatusOK)
	again := r.popGroup("q", "g", 5)
	if len(again.Messages) != 5 || payloadN(t, again.Messages[0]) != 0 || again.Messages[0].RetryCount != 0 ||
		again.LeaseID == held.LeaseID {
		t.Fatalf("after seek = %+v", again)
	}
	// The abandoned batch's lease is gone: its ack changes nothing.
	before := r.committed("q", "Default", "g")
	a := r.Ack(held.Messages[4], "completed", "g")
	if a["success"] != false || a["error"] != "Invalid or expired lease" {
		t.Fatalf("ack with the old lease = %v", a)
	}
	if after := r.committed("q", "Default", "g"); after != before {
		t.Fatalf("committed moved from %d to %d on a stale ack", before, after)
	}
	// The new lease acks normally.
	if a := r.Ack(again.Messages[4], "completed", "g"); a["success"] != true || a["leaseReleased"] != true {
		t.Fatalf("ack with the new lease = %v", a)
	}
}

func TestSeekWakesAParkedLongPoll(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	r.drain("q", "g")
	done := make(chan combtest.PopReply, 1)
	go func() {
		done <- r.Pop("/api/v1/pop/queue/q?consumerGroup=g&batch=100&wait=true&timeout=30000")
	}()
	select {
	case p := <-done:
		t.Fatalf("long poll returned before the seek: %d", p.Status)
	case <-time.After(200 * time.Millisecond):
	}
	r.seek("g", "q", map[string]any{"timestamp": ts(replayEpoch.Add(10 * time.Minute))}, http.StatusOK)
	select {
	case p := <-done:
		if p.Status != http.StatusOK || len(p.Messages) != 5 || payloadN(t, p.Messages[0]) != 10 {
			t.Fatalf("woken pop = %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("seek did not wake the parked pop (its timeout is 30 s)")
	}
}

func TestSeekAffectsExactlyOneGroup(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	for _, g := range []string{"a", "b", ""} {
		if got := r.drain("q", g); len(got) != 15 {
			t.Fatalf("group %q first pass = %v", g, got)
		}
	}
	r.seek("a", "q", map[string]any{"timestamp": "1970-01-01T00:00:00Z"}, http.StatusOK)
	if got := r.drain("q", "a"); !sameInts(got, ints(0, 14)) {
		t.Fatalf("group a replay = %v", got)
	}
	for _, g := range []string{"b", ""} {
		if p := r.popGroup("q", g, 100); p.Status != http.StatusNoContent {
			t.Fatalf("group %q was moved by a's seek: %d messages", g, len(p.Messages))
		}
	}
	// The queue-mode cursor is a group like any other.
	r.seek("__QUEUE_MODE__", "q", map[string]any{"timestamp": ts(replayEpoch.Add(10 * time.Minute))}, http.StatusOK)
	if got := r.drain("q", ""); !sameInts(got, ints(10, 14)) {
		t.Fatalf("queue-mode replay = %v", got)
	}
	if p := r.popGroup("q", "b", 100); p.Status != http.StatusNoContent {
		t.Fatal("group b was moved by the queue-mode seek")
	}
}

func TestSeekEveryPartitionOfAQueueIndependently(t *testing.T) {
	r := newReplay(t)
	r.segment("q", "eu", 0, 3)
	r.clk.Advance(time.Minute)
	r.segment("q", "us", 100, 4)
	r.clk.Advance(time.Minute)
	r.segment("q", "eu", 3, 3)
	r.drain("q", "g")
	body := r.seek("g", "q", map[string]any{"timestamp": ts(replayEpoch.Add(30 * time.Second))}, http.StatusOK)
	if body["partitionsUpdated"] != 2.0 {
		t.Fatalf("seek = %v", body)
	}
	got := map[int]bool{}
	for _, n := range r.drain("q", "g") {
		got[n] = true
	}
	// eu resumes at its 10:02 segment (3..5), us at its only segment (100..103).
	if len(got) != 7 || !got[3] || !got[5] || !got[100] || !got[103] || got[0] {
		t.Fatalf("replayed %v", got)
	}
}

func TestPartitionSeek(t *testing.T) {
	r := newReplay(t)
	r.segment("q", "eu", 0, 3)
	r.segment("q", "us", 100, 3)
	r.drain("q", "g")
	resp := r.Do("POST", r.partitionSeekPath("g", "q", "eu"), map[string]any{"timestamp": "2026-07-30T08:00:00Z"})
	body := resp.Map(t)
	if resp.Status != http.StatusOK || body["success"] != true || body["consumerGroup"] != "g" || body["queueName"] != "q" ||
		body["partitionName"] != "eu" || body["seekToEnd"] != false || body["targetTimestamp"] != "2026-07-30T08:00:00.000Z" ||
		body["updated"] != true {
		t.Fatalf("partition seek = %d %v", resp.Status, body)
	}
	if got := r.drain("q", "g"); !sameInts(got, []int{0, 1, 2}) {
		t.Fatalf("only eu replays: %v", got)
	}
	// An empty body, and a body with neither key (Queen's Go SDK sends {}), mean toEnd.
	for _, b := range []any{nil, "{}", map[string]any{"toEnd": false}} {
		r.seek("g", "q", map[string]any{"timestamp": "2020-01-01T00:00:00Z"}, http.StatusOK)
		resp := r.Do("POST", r.partitionSeekPath("g", "q", "us"), b)
		if resp.Status != http.StatusOK || resp.Map(t)["seekToEnd"] != true {
			t.Fatalf("partition seek with body %v = %d %s", b, resp.Status, resp.Body)
		}
		if got := r.drain("q", "g"); !sameInts(got, []int{0, 1, 2}) {
			t.Fatalf("after us to end, body %v: %v", b, got)
		}
	}
	wantError(t, r.Do("POST", r.partitionSeekPath("g", "q", "nope"), map[string]any{"toEnd": true}), http.StatusNotFound, "Partition not found")
	resp = r.Do("POST", r.partitionSeekPath("g", "nope", "eu"), nil)
	if body := resp.Map(t); resp.Status != http.StatusNotFound || body["success"] != false || body["error"] != "Partition not found" {
		t.Fatalf("unknown queue on the partition route = %d %v", resp.Status, body)
	}
}

func TestSeekRejectsBadBodiesWithExactErrors(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	r.drain("q", "g")
	const neither = "Must specify toEnd=true or a timestamp"
	cases := []struct {
		name   string
		body   any
		status int
		err    string // exact, or a prefix when it ends in "*"
	}{
		{"empty body", nil, 400, neither},
		{"empty object", "{}", 400, neither},
		{"toEnd false", `{"toEnd":false}`, 400, neither},
		{"empty timestamp", `{"timestamp":""}`, 400, neither},
		{"null timestamp", `{"timestamp":null}`, 400, neither},
		{"dryRun alone", `{"dryRun":true}`, 400, neither},
		{"bad JSON", `{"toEnd":`, 400, "Invalid JSON body*"},
		{"not an object", `[1]`, 400, "Invalid JSON body*"},
		{"toEnd not a boolean", `{"toEnd":"soon"}`, 400, "toEnd must be a boolean"},
		{"timestamp not a string", `{"timestamp":12}`, 400, "timestamp must be a string"},
		{"unparsable timestamp", `{"timestamp":"yesterday"}`, 400, `timestamp "yesterday" is not a valid time (RFC 3339 or YYYY-MM-DD)`},
		{"two positions", `{"toEnd":true,"timestamp":"2026-07-30T10:00:00Z"}`, 400, "Specify only one of toEnd, timestamp, offset or snapshot"},
		{"offset not an integer", `{"offset":"x"}`, 400, "offset must be an integer"},
		{"offset past the end", `{"offset":15}`, 400, `offset 15 is outside the retained range of partition "Default": committed may be set from -1 (replay everything retained) to 14 (skip to end)`},
		{"offset below the floor", `{"offset":-2}`, 400, "offset -2 is outside*"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := r.Do("POST", r.seekPath("g", "q"), c.body)
			if resp.Status != c.status {
				t.Fatalf("status %d %s, want %d", resp.Status, resp.Body, c.status)
			}
			got, _ := resp.Map(t)["error"].(string)
			if p, ok := strings.CutSuffix(c.err, "*"); ok {
				if !strings.HasPrefix(got, p) {
					t.Fatalf("error %q, want prefix %q", got, p)
				}
			} else if got != c.err {
				t.Fatalf("error %q, want %q", got, c.err)
			}
			if c := r.committed("q", "Default", "g"); c != 14 {
				t.Fatalf("a refused seek moved the cursor to %d", c)
			}
		})
	}
}

func TestSeekOfAnUnknownOrEmptyQueueFailsLoudly(t *testing.T) {
	r := newReplay(t)
	want := func(queue string) {
		t.Helper()
		resp := r.Do("POST", r.seekPath("invoicer", queue), map[string]any{"toEnd": true})
		body := resp.Map(t)
		if resp.Status != http.StatusNotFound || len(body) != 5 || body["success"] != false ||
			body["error"] != "Queue not found or has no partitions" || body["consumerGroup"] != "invoicer" ||
			body["queueName"] != queue || body["partitionsUpdated"] != 0.0 {
			t.Fatalf("seek of %q = %d %v", queue, resp.Status, body)
		}
	}
	want("nope")
	// A queue without partitions (only SQL can make one today) is the same failure.
	if _, err := r.db().Exec(`INSERT INTO queues (uuid, name, created_at) VALUES ('q-empty', 'empty', 0)`); err != nil {
		t.Fatal(err)
	}
	want("empty")
}

func TestSeekToAnExactOffset(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	r.drain("q", "g")
	body := r.seek("g", "q", map[string]any{"offset": 6}, http.StatusOK)
	if body["targetOffset"] != 6.0 || body["seekToEnd"] != false || body["targetTimestamp"] != nil {
		t.Fatalf("offset seek = %v", body)
	}
	// Unlike a timestamp, an offset cuts inside a segment.
	if got := r.drain("q", "g"); !sameInts(got, ints(7, 14)) {
		t.Fatalf("replay from offset 6 = %v", got)
	}
	r.seek("g", "q", map[string]any{"offset": -1}, http.StatusOK)
	if got := r.drain("q", "g"); !sameInts(got, ints(0, 14)) {
		t.Fatalf("replay from -1 = %v", got)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	r.drain("q", "g")
	held := r.popGroup("q", "g", 1) // nothing to pop: all consumed
	if held.Status != http.StatusNoContent {
		t.Fatal("expected nothing pending")
	}
	body := r.seek("g", "q", map[string]any{"timestamp": ts(replayEpoch.Add(4 * time.Minute)), "dryRun": true}, http.StatusOK)
	p := body["partitions"].([]any)[0].(map[string]any)
	if body["dryRun"] != true || body["partitionsUpdated"] != 0.0 || p["from"] != 14.0 || p["to"] != 4.0 ||
		p["redeliver"] != 10.0 || p["skip"] != 0.0 || p["overshootBound"] != 4.0 || p["clamped"] != false {
		t.Fatalf("dry run = %v", body)
	}
	if c := r.committed("q", "Default", "g"); c != 14 {
		t.Fatalf("dry run moved the cursor to %d", c)
	}
	if p := r.popGroup("q", "g", 100); p.Status != http.StatusNoContent {
		t.Fatal("dry run made messages deliverable")
	}
	// Forward dry run on the partition route: skip, not redeliver.
	r.seek("g", "q", map[string]any{"offset": 2}, http.StatusOK)
	resp := r.Do("POST", r.partitionSeekPath("g", "q", "Default"), map[string]any{"toEnd": true, "dryRun": true})
	body = resp.Map(t)
	p = body["partitions"].([]any)[0].(map[string]any)
	if resp.Status != http.StatusOK || body["updated"] != false || p["from"] != 2.0 || p["to"] != 14.0 || p["skip"] != 12.0 ||
		p["redeliver"] != 0.0 {
		t.Fatalf("partition dry run = %d %v", resp.Status, body)
	}
	if c := r.committed("q", "Default", "g"); c != 2 {
		t.Fatalf("partition dry run moved the cursor to %d", c)
	}
}

// --- subscription --------------------------------------------------------

func TestSubscriptionRouteRewritesTheStoredTimestampOnly(t *testing.T) {
	r := newReplay(t)
	path := "/api/v1/consumer-groups/g/subscription"
	wantError(t, r.Do("POST", path, nil), 400, "subscriptionTimestamp is required")
	wantError(t, r.Do("POST", path, "{}"), 400, "subscriptionTimestamp is required")
	wantError(t, r.Do("POST", path, `{"subscriptionTimestamp":""}`), 400, "subscriptionTimestamp is required")
	wantError(t, r.Do("POST", path, `{"subscriptionTimestamp":5}`), 400, "subscriptionTimestamp must be a string")
	wantError(t, r.Do("POST", path, `{"subscriptionTimestamp":"soon"}`), 400,
		`subscriptionTimestamp "soon" is not a valid time (RFC 3339 or YYYY-MM-DD)`)
	if resp := r.Do("POST", path, `{"subscriptionTimestamp":`); resp.Status != 400 {
		t.Fatalf("bad JSON = %d", resp.Status)
	}

	// A group with no subscription record: nothing to update.
	resp := r.Do("POST", path, map[string]any{"subscriptionTimestamp": "2026-07-30T10:03:00Z"})
	if body := resp.Map(t); resp.Status != 200 || body["rowsUpdated"] != 0.0 || body["success"] != true {
		t.Fatalf("update of a group without records = %v", body)
	}

	// g subscribes to a and b (mode new) and consumes what comes after.
	r.segment("a", "p1", 0, 2)
	r.segment("b", "Default", 0, 2)
	for _, q := range []string{"a", "b"} {
		if p := r.Pop("/api/v1/pop/queue/" + q + "?consumerGroup=g&subscriptionMode=new"); p.Status != http.StatusNoContent {
			t.Fatalf("first contact with new on %s delivered %d", q, len(p.Messages))
		}
	}
	r.clk.Set(replayEpoch.Add(10 * time.Minute))
	r.segment("a", "p1", 2, 2)
	if got := r.drain("a", "g"); !sameInts(got, []int{2, 3}) {
		t.Fatalf("g on a = %v", got)
	}

	// Rewrite the stored start to 10:03 on every queue of g; no cursor moves.
	resp = r.Do("POST", path, map[string]any{"subscriptionTimestamp": "2026-07-30T10:03:00Z"})
	body := resp.Map(t)
	if resp.Status != 200 || len(body) != 4 || body["success"] != true || body["consumerGroup"] != "g" ||
		body["newTimestamp"] != "2026-07-30T10:03:00Z" || body["rowsUpdated"] != 2.0 {
		t.Fatalf("update = %d %v", resp.Status, body)
	}
	if c := r.committed("a", "p1", "g"); c != 3 {
		t.Fatalf("the update moved a cursor to %d", c)
	}
	if p := r.popGroup("a", "g", 100); p.Status != http.StatusNoContent {
		t.Fatal("the update re-exposed consumed messages")
	}

	// A partition created later is seeded from the stored timestamp. Its
	// history straddles 10:03 (the manual clock is stepped back to write it),
	// and only the part at or after 10:03 is delivered.
	r.clk.Set(replayEpoch.Add(1 * time.Minute))
	r.segment("a", "p2", 100, 2)
	r.clk.Set(replayEpoch.Add(5 * time.Minute))
	r.segment("a", "p2", 102, 2)
	if got := r.drain("a", "g"); !sameInts(got, []int{102, 103}) {
		t.Fatalf("later partition seeded from the stored timestamp delivered %v, want 102, 103", got)
	}
}

func TestLaterPartitionOfANewOnlyGroupKeepsItsBacklog(t *testing.T) {
	r := newReplay(t)
	r.segment("q", "p1", 0, 3)
	// subscriptionMode=new at 10:00: the backlog of p1 is skipped.
	if p := r.Pop("/api/v1/pop/queue/q?consumerGroup=fresh&subscriptionMode=new"); p.Status != http.StatusNoContent {
		t.Fatalf("new skipped nothing: %d", len(p.Messages))
	}
	// p2 appears later with its own backlog: it was all pushed after the
	// group subscribed, so none of it is skipped.
	r.clk.Advance(time.Minute)
	r.segment("q", "p2", 100, 3)
	r.clk.Advance(time.Minute)
	r.segment("q", "p2", 103, 2)
	if got := r.drain("q", "fresh"); !sameInts(got, ints(100, 104)) {
		t.Fatalf("later partition delivered %v, want 100..104", got)
	}
	// Passing another mode on later pops changes nothing.
	r.segment("q", "p1", 3, 1)
	if got := r.Pop("/api/v1/pop/queue/q?consumerGroup=fresh&subscriptionMode=all&batch=100"); len(got.Messages) != 1 {
		t.Fatalf("re-subscription re-seeded: %d messages", len(got.Messages))
	}
}

// --- delete --------------------------------------------------------------

func TestDeleteGroupStartsItAfresh(t *testing.T) {
	r := newReplay(t)
	r.segment("a", "p1", 0, 2)
	r.segment("a", "p2", 10, 2)
	r.segment("b", "Default", 20, 2)
	r.drain("a", "g")
	r.drain("b", "g")
	r.drain("a", "other")
	held := r.popGroup("a", "g", 1)
	if held.Status != http.StatusNoContent {
		t.Fatal("g should have nothing left")
	}
	r.segment("a", "p1", 2, 1)
	held = r.popGroup("a", "g", 1) // a lease that dies with the group

	resp := r.Do("DELETE", "/api/v1/consumer-groups/g", nil)
	body := resp.Map(t)
	if resp.Status != 200 || len(body) != 4 || body["success"] != true || body["consumerGroup"] != "g" ||
		body["deletedPartitions"] != 3.0 || body["metadataDeleted"] != true {
		t.Fatalf("delete = %d %v", resp.Status, body)
	}
	if a := r.Ack(held.Messages[0], "completed", "g"); a["success"] != false || a["error"] != "Invalid or expired lease" {
		t.Fatalf("ack of a deleted group's lease = %v", a)
	}
	// Recreated under mode all: everything retained again.
	if got := r.drain("a", "g"); len(got) != 5 {
		t.Fatalf("recreated group on a = %v", got)
	}
	if got := r.drain("b", "g"); !sameInts(got, []int{20, 21}) {
		t.Fatalf("recreated group on b = %v", got)
	}
	if p := r.popGroup("a", "other", 10); len(p.Messages) != 1 {
		t.Fatalf("other group was touched: %d", len(p.Messages))
	}
	// Unknown group: 200 with 0, as SDK cleanups expect.
	resp = r.Do("DELETE", "/api/v1/consumer-groups/never", nil)
	if body := resp.Map(t); resp.Status != 200 || body["deletedPartitions"] != 0.0 || body["success"] != true {
		t.Fatalf("delete of an unknown group = %d %v", resp.Status, body)
	}
}

func TestDeleteGroupOnOneQueue(t *testing.T) {
	r := newReplay(t)
	r.segment("a", "p1", 0, 2)
	r.segment("a", "p2", 10, 2)
	r.segment("b", "Default", 20, 2)
	r.drain("a", "g")
	r.drain("b", "g")
	resp := r.Do("DELETE", "/api/v1/consumer-groups/g/queues/a", nil)
	body := resp.Map(t)
	if resp.Status != 200 || len(body) != 5 || body["success"] != true || body["consumerGroup"] != "g" ||
		body["queueName"] != "a" || body["deletedPartitions"] != 2.0 || body["metadataDeleted"] != true {
		t.Fatalf("delete = %d %v", resp.Status, body)
	}
	if got := r.drain("a", "g"); len(got) != 4 {
		t.Fatalf("recreated on a = %v", got)
	}
	if p := r.popGroup("b", "g", 10); p.Status != http.StatusNoContent {
		t.Fatal("queue b was touched")
	}
	// deleteMetadata=false keeps the subscription record.
	subs := func() int {
		var n int
		if err := r.db().QueryRow(`SELECT COUNT(*) FROM subscriptions WHERE group_name = 'g'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	resp = r.Do("DELETE", "/api/v1/consumer-groups/g/queues/b?deleteMetadata=false", nil)
	if body := resp.Map(t); resp.Status != 200 || body["metadataDeleted"] != false || body["deletedPartitions"] != 1.0 {
		t.Fatalf("delete without metadata = %v", body)
	}
	if n := subs(); n != 2 {
		t.Fatalf("subscriptions left = %d, want 2", n)
	}
	resp = r.Do("DELETE", "/api/v1/consumer-groups/g/queues/nope", nil)
	if body := resp.Map(t); resp.Status != 200 || body["deletedPartitions"] != 0.0 {
		t.Fatalf("delete on an unknown queue = %v", body)
	}
	r.Do("DELETE", "/api/v1/consumer-groups/g", nil)
	if n := subs(); n != 0 {
		t.Fatalf("subscriptions left after a full delete = %d", n)
	}
}

// --- listings ------------------------------------------------------------

func TestListConsumerGroups(t *testing.T) {
	r := newReplay(t)
	if resp := r.Do("GET", "/api/v1/consumer-groups", nil); resp.Status != 200 || string(resp.Body) != "[]" {
		t.Fatalf("empty listing = %d %s", resp.Status, resp.Body)
	}
	r.segment("orders", "eu", 0, 4)
	r.segment("orders", "us", 0, 3)
	r.clk.Advance(time.Minute)
	r.segment("orders", "eu", 4, 2) // eu: offsets 0..5, us: 0..2
	// invoicer consumes eu up to offset 1, nothing on us.
	p := r.Pop("/api/v1/pop/queue/orders/partition/eu?consumerGroup=invoicer&batch=2")
	r.Ack(p.Messages[1], "completed", "invoicer")
	// idle has cursors and never consumed.
	r.seek("idle", "orders", map[string]any{"toEnd": true}, http.StatusOK)

	r.clk.Advance(100 * time.Second) // the 10:00 segments are 160 s old
	var groups []map[string]any
	r.Do("GET", "/api/v1/consumer-groups", nil).JSON(t, &groups)
	if len(groups) != 2 {
		t.Fatalf("groups = %v", groups)
	}
	idle, inv := groups[0], groups[1]
	if inv["name"] != "invoicer" || inv["queueName"] != "orders" || fmt.Sprint(inv["topics"]) != "[orders]" ||
		inv["members"] != 2.0 || inv["partitionCursors"] != 2.0 || inv["partitionsWithLag"] != 2.0 ||
		inv["totalLag"] != 7.0 || inv["maxTimeLag"] != 160.0 || inv["state"] != "Stable" || inv["storage"] != "segments" ||
		inv["subscriptionMode"] != nil || inv["subscriptionTimestamp"] != nil || inv["subscriptionCreatedAt"] != nil || len(inv) != 13 {
		t.Fatalf("invoicer = %v", inv)
	}
	if idle["name"] != "idle" || idle["totalLag"] != 0.0 || idle["partitionsWithLag"] != 0.0 || idle["maxTimeLag"] != 0.0 ||
		idle["state"] != "Dead" {
		t.Fatalf("idle = %v", idle)
	}
	// Older than five minutes: Lagging.
	r.clk.Advance(200 * time.Second)
	r.Do("GET", "/api/v1/consumer-groups", nil).JSON(t, &groups)
	if groups[1]["state"] != "Lagging" || groups[1]["maxTimeLag"] != 360.0 {
		t.Fatalf("invoicer after 6 min = %v", groups[1])
	}
	// Frames evicted by retention are not lag; the oldest unconsumed
	// segment is then the oldest retained one.
	r.evictBelow("orders", "eu", 4)
	r.evictBelow("orders", "us", 3)
	r.Do("GET", "/api/v1/consumer-groups", nil).JSON(t, &groups)
	if groups[1]["totalLag"] != 2.0 || groups[1]["partitionsWithLag"] != 1.0 || groups[1]["maxTimeLag"] != 300.0 ||
		groups[1]["state"] != "Stable" {
		t.Fatalf("invoicer after eviction = %v", groups[1])
	}
}

func TestGetConsumerGroup(t *testing.T) {
	r := newReplay(t)
	if resp := r.Do("GET", "/api/v1/consumer-groups/nobody", nil); resp.Status != 200 || string(resp.Body) != "{}" {
		t.Fatalf("unknown group = %d %s", resp.Status, resp.Body)
	}
	r.segment("orders", "eu-1", 0, 3)
	r.segment("audit", "Default", 0, 1)
	r.drain("audit", "invoicer")
	p := r.Pop("/api/v1/pop/queue/orders?consumerGroup=invoicer&batch=1")
	r.clk.Advance(90 * time.Second)

	var got map[string]struct {
		Partitions []map[string]any `json:"partitions"`
	}
	r.Do("GET", "/api/v1/consumer-groups/invoicer", nil).JSON(t, &got)
	if len(got) != 2 || len(got["orders"].Partitions) != 1 || len(got["audit"].Partitions) != 1 {
		t.Fatalf("group = %v", got)
	}
	o := got["orders"].Partitions[0]
	if o["partition"] != "eu-1" || o["workerId"] != p.LeaseID || o["lastConsumedAt"] != nil || o["totalConsumed"] != 0.0 ||
		o["offsetLag"] != 3.0 || o["timeLagSeconds"] != 90.0 || o["leaseActive"] != true {
		t.Fatalf("orders/eu-1 = %v", o)
	}
	a := got["audit"].Partitions[0]
	if a["totalConsumed"] != 1.0 || a["offsetLag"] != 0.0 || a["timeLagSeconds"] != 0.0 || a["leaseActive"] != false ||
		a["lastConsumedAt"] != "2026-07-30T10:00:00.000Z" || a["workerId"] != nil {
		t.Fatalf("audit/Default = %v", a)
	}
	// leaseActive only while the expiry is ahead.
	r.clk.Advance(301 * time.Second)
	r.Do("GET", "/api/v1/consumer-groups/invoicer", nil).JSON(t, &got)
	if got["orders"].Partitions[0]["leaseActive"] != false {
		t.Fatalf("expired lease reported active: %v", got["orders"].Partitions[0])
	}
}

func TestLaggingConsumerGroups(t *testing.T) {
	r := newReplay(t)
	lagging := func(query string) []map[string]any {
		t.Helper()
		resp := r.Do("GET", "/api/v1/consumer-groups/lagging"+query, nil)
		if resp.Status != 200 {
			t.Fatalf("lagging = %d %s", resp.Status, resp.Body)
		}
		var out []map[string]any
		resp.JSON(t, &out)
		return out
	}
	if got := lagging(""); len(got) != 0 {
		t.Fatalf("nothing yet: %v", got)
	}
	r.segment("orders", "eu-3", 0, 4)
	r.segment("orders", "eu-4", 0, 1)
	r.drain("orders", "fast")
	// invoicer has cursors on both partitions and consumed eu-4 only.
	r.seek("invoicer", "orders", map[string]any{"offset": -1}, http.StatusOK)
	r.Ack(r.Pop("/api/v1/pop/queue/orders/partition/eu-4?consumerGroup=invoicer").Messages[0], "completed", "invoicer")

	r.clk.Advance(7421 * time.Second)
	got := lagging("")
	if len(got) != 1 {
		t.Fatalf("lagging over the default hour = %v", got)
	}
	l := got[0]
	if l["consumer_group"] != "invoicer" || l["queue_name"] != "orders" || l["partition_name"] != "eu-3" ||
		l["partition_id"] == "" || l["offset_lag"] != 4.0 || l["time_lag_seconds"] != 7421.0 || l["lag_hours"] != 2.06 ||
		l["oldest_unconsumed_at"] != "2026-07-30T10:00:00.000Z" || l["last_consumed_at"] != nil || len(l) != 10 {
		t.Fatalf("lagging row = %v", l)
	}
	if got := lagging("?minLagSeconds=7421"); len(got) != 0 {
		t.Fatalf("time lag must exceed the threshold: %v", got)
	}
	wantError(t, r.Do("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=abc", nil), 400,
		`minLagSeconds must be an integer (got "abc")`)
	// A backlog that retention evicted entirely drops out.
	r.evictBelow("orders", "eu-3", 4)
	if got := lagging("?minLagSeconds=0"); len(got) != 0 {
		t.Fatalf("evicted backlog still lagging: %v", got)
	}
}

// --- the replay recipes of docs/snapshots.md, end to end ---------------------------

func TestRecipeReprocessTheLastHourForOneGroup(t *testing.T) {
	r := newReplay(t)
	r.segment("orders", "Default", 0, 3) // 10:00
	r.clk.Advance(90 * time.Minute)
	r.segment("orders", "Default", 3, 2) // 11:30
	r.clk.Advance(30 * time.Minute)      // now 12:00
	r.drain("orders", "billing")
	r.drain("orders", "audit")
	r.seek("billing", "orders", map[string]any{"timestamp": ts(r.clk.Now().Add(-time.Hour))}, http.StatusOK)
	if got := r.drain("orders", "billing"); !sameInts(got, []int{3, 4}) {
		t.Fatalf("billing reprocessed %v, want the last hour (3, 4)", got)
	}
	if p := r.popGroup("orders", "audit", 10); p.Status != http.StatusNoContent {
		t.Fatal("audit lost its position")
	}
}

func TestRecipeSkipABacklog(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("orders")
	r.seek("billing", "orders", map[string]any{"toEnd": true}, http.StatusOK)
	if p := r.popGroup("orders", "billing", 100); p.Status != http.StatusNoContent {
		t.Fatal("backlog not skipped")
	}
	r.segment("orders", "Default", 15, 1)
	if got := r.drain("orders", "billing"); !sameInts(got, []int{15}) {
		t.Fatalf("after skip = %v", got)
	}
}

func TestRecipeNewConsumerWithoutHistory(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("orders")
	if p := r.Pop("/api/v1/pop/queue/orders?consumerGroup=newbie&subscriptionMode=new"); p.Status != http.StatusNoContent {
		t.Fatal("history delivered to a new-only group")
	}
	r.segment("orders", "Default", 15, 2)
	if got := r.drain("orders", "newbie"); !sameInts(got, []int{15, 16}) {
		t.Fatalf("new-only group = %v", got)
	}
}

func TestRecipeRerunAPipelineFromScratch(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("orders")
	r.drain("orders", "pipeline-v1")
	if got := r.drain("orders", "pipeline-v2"); !sameInts(got, ints(0, 14)) {
		t.Fatalf("fresh group read %v, want the whole retained log", got)
	}
	if p := r.popGroup("orders", "pipeline-v1", 100); p.Status != http.StatusNoContent {
		t.Fatal("the old group was disturbed")
	}
}

func TestRecipeGiveUpOnAStuckBatch(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("orders")
	stuck := r.popGroup("orders", "billing", 5)
	if p := r.popGroup("orders", "billing", 5); p.Status != http.StatusNoContent {
		t.Fatal("the batch should hold the partition")
	}
	// Seek back to where the stuck batch starts: the lease is abandoned
	// without waiting 300 s for it to expire.
	at, err := time.Parse(time.RFC3339Nano, stuck.Messages[0].CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	r.seek("billing", "orders", map[string]any{"timestamp": ts(at)}, http.StatusOK)
	again := r.popGroup("orders", "billing", 5)
	if len(again.Messages) != 5 || again.Messages[0].TransactionID != stuck.Messages[0].TransactionID {
		t.Fatalf("after giving up = %+v", again)
	}
}

func TestSubscriptionFromATimeUsesTheSameSegmentWalk(t *testing.T) {
	r := newReplay(t)
	r.threeSegments("q")
	// 10:07 falls between the 10:05 and 10:10 segments: the group starts at
	// the 10:10 one, exactly where a seek to 10:07 lands.
	p := r.Pop("/api/v1/pop/queue/q?consumerGroup=late&batch=100&subscriptionFrom=" + url.QueryEscape(ts(replayEpoch.Add(7*time.Minute))))
	if len(p.Messages) != 5 || payloadN(t, p.Messages[0]) != 10 {
		t.Fatalf("subscriptionFrom 10:07 delivered %d from %v", len(p.Messages), p.Messages)
	}
	// A time older than the retained window starts at the oldest retained segment.
	r.evictBelow("q", "Default", 5)
	p = r.Pop("/api/v1/pop/queue/q?consumerGroup=ancient&batch=100&subscriptionFrom=2000-01-01T00:00:00Z")
	if len(p.Messages) != 10 || payloadN(t, p.Messages[0]) != 5 {
		t.Fatalf("subscriptionFrom before retention delivered %d", len(p.Messages))
	}
	// The queue-mode cursor ignores subscription modes: it never skips a backlog.
	p = r.Pop("/api/v1/pop/queue/q?batch=100&subscriptionMode=new")
	if len(p.Messages) != 10 || payloadN(t, p.Messages[0]) != 5 {
		t.Fatalf("queue mode with subscriptionMode=new delivered %d", len(p.Messages))
	}
}

// A seek's reply lists at most 1,000 of the partitions it moved and
// counts the rest; before, it listed every one (86.8 MB at 200,000).
func TestASeekReplyListsABoundedNumberOfPartitions(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	items := make([]map[string]any, 1005)
	for i := range items {
		items[i] = map[string]any{"queue": "wide", "partition": fmt.Sprintf("p%04d", i), "payload": i}
	}
	s.Push(items...)
	r := s.Do("POST", "/api/v1/consumer-groups/g/queues/wide/seek", map[string]any{"toEnd": true})
	if r.Status != http.StatusOK {
		t.Fatalf("seek: %d %s", r.Status, r.Body)
	}
	var res struct {
		Updated    int              `json:"partitionsUpdated"`
		Omitted    int              `json:"partitionsOmitted"`
		Partitions []map[string]any `json:"partitions"`
		Totals     struct {
			Partitions, Moving, Skip int
		} `json:"totals"`
	}
	r.JSON(t, &res)
	if res.Updated != 1005 || len(res.Partitions) != 1000 || res.Omitted != 5 {
		t.Errorf("seek of 1,005 partitions: updated %d, listed %d, omitted %d; want 1005, 1000, 5", res.Updated, len(res.Partitions), res.Omitted)
	}
	if res.Totals.Partitions != 1005 || res.Totals.Moving != 1005 || res.Totals.Skip != 1005 {
		t.Errorf("seek totals %+v, want all 1,005 partitions moving past their one message", res.Totals)
	}
}
