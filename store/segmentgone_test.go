package store

import (
	"context"
	"errors"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// A segment the message listing found and retention removed before the
// listing read it is left out, not an error: the listing answered 500
// about once in a hundred requests beside a sweep every 200 ms ("read
// segment 53: sql: no rows in result set").
func TestASegmentRemovedSinceItWasListedIsLeftOut(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, nil)
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	var id, count int64
	if err := s.rdb.QueryRow(`SELECT id, frame_count FROM segments`).Scan(&id, &count); err != nil {
		t.Fatal(err)
	}
	if _, err := s.segmentFrames(ctx, id, int(count)); err != nil {
		t.Fatalf("read the segment: %v", err)
	}
	if err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		_, err := w.ExecContext(w.ctx, `DELETE FROM segments WHERE id = ?`, id)
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.segmentFrames(ctx, id, int(count)); !errors.Is(err, errSegmentGone) {
		t.Fatalf("read the segment removed since = %v, want errSegmentGone, which the listing skips", err)
	}
}
