package store_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// ListMessages decodes only the segments its page needs: with the oldest
// segment corrupted, every page that does not reach it reads it not, and
// the one that does is answered without its messages and puts it aside.
func TestListMessagesDecodesOnlyWhatThePageNeeds(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	fillQueue(t, st, "m", 1, 5, 10) // segments at offsets 0, 5, ..., 45
	db, err := sql.Open("sqlite", "file:"+st.Path()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 0`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit, offset int
		first         int64
		corrupt       bool
	}{
		{10, 0, 49, false},
		{10, 30, 19, false},
		{5, 40, 9, false},
		{10, 45, 0, true},
		{1, 49, 0, true},
	} {
		before := st.Stats().Quarantined.Load()
		msgs, _, err := st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "m", Limit: c.limit, Offset: c.offset})
		if read := st.Stats().Quarantined.Load() > before; read != c.corrupt {
			t.Errorf("limit %d offset %d: damaged segment put aside %v, want %v", c.limit, c.offset, read, c.corrupt)
		}
		if c.corrupt {
			if err != nil || len(msgs) != 0 {
				t.Errorf("limit %d offset %d: %v, %v; want the page without the damaged segment's messages", c.limit, c.offset, msgs, err)
			}
			if _, err := db.Exec(`DELETE FROM quarantined_segments`); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || len(msgs) != c.limit || msgs[0].Offset != c.first || msgs[len(msgs)-1].Offset != c.first-int64(c.limit)+1 {
			t.Errorf("limit %d offset %d: %d messages from %v, %v", c.limit, c.offset, len(msgs), msgs, err)
		}
	}
	// A status filter is decided by arithmetic before decoding too: the
	// only group starts at the end, nothing is pending, nothing is read.
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "m", Group: "g", SubscriptionMode: "new"}); err != nil {
		t.Fatal(err)
	}
	msgs, _, err := st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "m", Status: combtype.MessagePending, Limit: 100})
	if err != nil || len(msgs) != 0 {
		t.Errorf("pending after the only group skipped everything: %d, %v", len(msgs), err)
	}
	// Put the checksum back so the store closes on a sound file.
	if _, err := db.Exec(`UPDATE segments SET checksum = checksum - 1 WHERE base_offset = 0`); err != nil {
		t.Fatal(err)
	}
}

// A page of messages reads the cursors of the partitions its segments
// belong to, not of every partition of the queue: with 2,000 partitions,
// a page of 10 reads at most its first chunk's worth.
func TestListMessagesReadsOnlyThePartitionsItMeets(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	fillQueue(t, st, "wide", 2000, 1, 1)
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "wide", Group: "g", Batch: 1}); err != nil {
		t.Fatal(err)
	}
	before := st.Stats().ListedPartitions.Load()
	msgs, mode, err := st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "wide", Limit: 10})
	if err != nil || len(msgs) != 10 {
		t.Fatalf("page: %d messages, %v", len(msgs), err)
	}
	if read := st.Stats().ListedPartitions.Load() - before; read > 16 {
		t.Errorf("a page of 10 read the cursors of %d partitions, want at most 16", read)
	}
	if mode.HasQueueMode || mode.BusGroups != 1 || mode.Type != "bus" {
		t.Errorf("mode = %+v, want one bus group", mode)
	}
}

// A listing's walk is bounded by what its page needs: a status no message
// has walked every segment of the time window, loading every partition's
// cursors (300,000 partitions: 145 s), and so did a deep offset, which is
// now refused past combtype.MaxPageOffset as on the other listings.
func TestListMessagesWalksABoundedNumberOfSegments(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	const parts = 12_500
	fillQueue(t, st, "wide", parts, 1, 1)
	before := st.Stats().ListedPartitions.Load()
	msgs, _, err := st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "wide", Status: combtype.MessageDeadLetter, Limit: 1})
	if err != nil || len(msgs) != 0 {
		t.Fatalf("dead letters of a queue that has none: %d, %v", len(msgs), err)
	}
	// 1 + 10,000 segments, and the rest of the last chunk read.
	read := st.Stats().ListedPartitions.Load() - before
	if read > 10_001+256 {
		t.Errorf("a listing that matched nothing read the cursors of %d partitions of %d", read, parts)
	}
	if _, _, err := st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "wide", Limit: 1, Offset: combtype.MaxPageOffset + 1}); !errors.Is(err, combtype.ErrInvalid) {
		t.Errorf("offset past %d: %v; want ErrInvalid", combtype.MaxPageOffset, err)
	}
	msgs, _, err = st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "wide", Limit: 5, Offset: combtype.MaxPageOffset})
	if err != nil || len(msgs) != 5 {
		t.Errorf("offset %d: %d messages, %v", combtype.MaxPageOffset, len(msgs), err)
	}
}
