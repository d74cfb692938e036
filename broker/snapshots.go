package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Snapshots: named captures of a group's cursors on a queue, to seek back
// to (GroupSeek with a Snapshot target). They expire; expired ones are
// swept by retention.

// SnapshotCreate captures a group's committed offsets on every partition
// of a queue, and returns the snapshot with the first page of its cursors.
// A live name is combtype.ErrSnapshotExists; an unknown queue
// combtype.ErrSnapshotConflict.
func (b *Broker) SnapshotCreate(ctx context.Context, req combtype.CreateSnapshotRequest) (*combtype.Snapshot, error) {
	if err := checkNames("name", req.Name, "consumerGroup", req.Group, "queue", req.Queue); err != nil {
		return nil, err
	}
	if err := checkLabels(req.Labels); err != nil {
		return nil, err
	}
	if err := b.checkExpiry(req.ExpiresAt); err != nil {
		return nil, err
	}
	return b.st.CreateSnapshot(ctx, b.tenant, req)
}

// SnapshotGet returns a live snapshot with the first page of its cursors
// (Snapshot.CursorsNext says where SnapshotCursorPage reads on), or
// combtype.ErrSnapshotNotFound.
func (b *Broker) SnapshotGet(ctx context.Context, name string) (*combtype.Snapshot, error) {
	return b.st.Snapshot(ctx, b.tenant, name)
}

// SnapshotCursorPage returns a live snapshot with the page pg of its
// cursors in Snapshot.Cursors, in partition creation order, and
// PageInfo.Next, the pg.After of the next page ("" on the last). Limit 0
// is combtype.DefaultPageLimit; pages follow After, and an Offset is
// combtype.ErrInvalid, as is an After no page handed out. Total is not
// counted (-1). An unknown or expired name is
// combtype.ErrSnapshotNotFound.
func (b *Broker) SnapshotCursorPage(ctx context.Context, name string, pg combtype.Page) (*combtype.Snapshot, combtype.PageInfo, error) {
	return b.st.SnapshotCursorPage(ctx, b.tenant, name, pg)
}

// SnapshotList lists the tenant's live snapshots matching f; empty when
// none match.
func (b *Broker) SnapshotList(ctx context.Context, f combtype.SnapshotFilter) ([]combtype.Snapshot, error) {
	return b.st.Snapshots(ctx, b.tenant, f.Group, f.Queue)
}

// SnapshotPage is the page pg of SnapshotList, by name (Limit 0: all of
// them), and how many match (PageInfo.Total).
func (b *Broker) SnapshotPage(ctx context.Context, f combtype.SnapshotFilter, pg combtype.Page) ([]combtype.Snapshot, combtype.PageInfo, error) {
	return b.st.SnapshotPage(ctx, b.tenant, f.Group, f.Queue, pg)
}

// SnapshotUpdate changes a live snapshot's labels and/or expiry and
// returns it as updated, with the first page of its cursors. An unknown or expired name is
// combtype.ErrSnapshotNotFound, an expiry not in the future
// combtype.ErrInvalid; either changes nothing.
func (b *Broker) SnapshotUpdate(ctx context.Context, name string, u combtype.SnapshotUpdate) (*combtype.Snapshot, error) {
	if u.SetLabels {
		if err := checkLabels(u.Labels); err != nil {
			return nil, err
		}
	}
	if u.ExpiresAt != nil {
		if err := b.checkExpiry(*u.ExpiresAt); err != nil {
			return nil, err
		}
	}
	return b.st.UpdateSnapshot(ctx, b.tenant, name, u)
}

// checkExpiry refuses a snapshot expiry further than ttlSeconds may set
// it, MaxDurationSeconds from now.
func (b *Broker) checkExpiry(at time.Time) error {
	if limit := b.Now().Add(MaxDurationSeconds * time.Second); at.After(limit) {
		return fmt.Errorf("%w: expireTime %s is more than %d seconds (ten years) away", combtype.ErrInvalid,
			at.UTC().Format(time.RFC3339), MaxDurationSeconds)
	}
	return nil
}

// SnapshotDelete removes a live snapshot, or answers
// combtype.ErrSnapshotNotFound.
func (b *Broker) SnapshotDelete(ctx context.Context, name string) error {
	return b.st.DeleteSnapshot(ctx, b.tenant, name)
}
