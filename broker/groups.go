package broker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Consumer groups: where each stands (its cursors and their lag), where it
// starts (its subscription) and moving it (seek).

// GroupSeek moves one group's cursors on a queue (or one partition of it)
// to req.Target, releasing its leases and resetting its retry counters, and
// wakes parked pops so replay starts on the next poll; other groups are
// untouched. All partitions move in one commit, or none. A target naming no
// position or more than one is refused with combtype.ErrNoTarget or
// combtype.ErrManyTargets (both wrapped with combtype.ErrInvalid), an offset
// outside a partition's retained range with combtype.ErrInvalid; an unknown
// queue is combtype.ErrQueueNotFound, an unknown snapshot
// combtype.ErrSnapshotNotFound. With DryRun it only reports.
func (b *Broker) GroupSeek(ctx context.Context, req combtype.SeekRequest) (*combtype.SeekResult, error) {
	// A seek stores the group's cursors and subscription, as a pop does,
	// under the same name rule.
	if err := CheckName("consumerGroup", req.Group); err != nil {
		return nil, err
	}
	return b.st.Seek(ctx, b.tenant, req)
}

// GroupList lists the tenant's (group, queue) pairs with their lag, by
// group then queue: every pair with cursors or a subscription. A tenant
// with none lists nothing.
func (b *Broker) GroupList(ctx context.Context) ([]combtype.GroupSummary, error) {
	return b.st.Groups(ctx, b.tenant)
}

// GroupLag returns every cursor of group with its lag, one per partition,
// by queue then partition creation; an unknown group has none (an empty
// list).
func (b *Broker) GroupLag(ctx context.Context, group string) ([]combtype.PartitionLag, error) {
	return b.st.Group(ctx, b.tenant, group)
}

// GroupLagging returns the cursors, of any group, whose oldest unconsumed
// segment is older than minLag.
func (b *Broker) GroupLagging(ctx context.Context, minLag time.Duration) ([]combtype.PartitionLag, error) {
	return b.st.LaggingPartitions(ctx, b.tenant, minLag)
}

// GroupOffsets returns the committed offset, last offset and log start of
// every cursor of group, keyed by partition uuid. It only reads.
func (b *Broker) GroupOffsets(ctx context.Context, group string) (map[string]combtype.CursorOffsets, error) {
	return b.st.GroupOffsets(ctx, b.tenant, group)
}

// GroupBacklog is the number of retained messages of req.Queue that
// req.Group ("" = combtype.QueueModeGroup) has not consumed, partitions it
// never met counted from where its subscription places it. An unknown
// queue counts 0.
func (b *Broker) GroupBacklog(ctx context.Context, req combtype.BacklogRequest) (int64, error) {
	return b.st.Backlog(ctx, b.tenant, req.Queue, cmp.Or(req.Group, combtype.QueueModeGroup))
}

// GroupBacklogOldest is the commit time of the oldest retained message of
// req.Queue that req.Group ("" = combtype.QueueModeGroup) has not
// consumed, to the segment; zero when there is none or the queue does not
// exist.
func (b *Broker) GroupBacklogOldest(ctx context.Context, req combtype.BacklogRequest) (time.Time, error) {
	return b.st.BacklogOldest(ctx, b.tenant, req.Queue, cmp.Or(req.Group, combtype.QueueModeGroup))
}

// GroupSubscribeFrom makes the partitions group meets from now on start at
// t, on every queue it is subscribed to; it moves no cursor. It returns the
// number of subscriptions changed and wakes parked pops of those queues.
func (b *Broker) GroupSubscribeFrom(ctx context.Context, group string, t time.Time) (int64, error) {
	return b.st.UpdateSubscription(ctx, b.tenant, group, t)
}

// GroupReleaseLeases drops every lease group holds on the tenant's queues,
// without charging a retry: for a group whose only consumer is starting
// and holds none of them. It returns how many it dropped.
func (b *Broker) GroupReleaseLeases(ctx context.Context, group string) (int64, error) {
	return b.st.ReleaseGroupLeases(ctx, b.tenant, group)
}

// GroupDelete removes a group's cursors (on one queue when req.Queue is
// not ""), and with req.DeleteMetadata its subscription records. It
// returns the number of cursors removed.
func (b *Broker) GroupDelete(ctx context.Context, req combtype.GroupDeleteRequest) (int64, error) {
	if req.Group == "" {
		return 0, fmt.Errorf("%w: group is required", combtype.ErrInvalid)
	}
	return b.st.DeleteGroup(ctx, b.tenant, req.Group, req.Queue, req.DeleteMetadata)
}

// GroupListPage is GroupList a page at a time (Limit and Offset; After is
// refused with combtype.ErrInvalid), ordered by group then queue.
func (b *Broker) GroupListPage(ctx context.Context, pg combtype.Page) ([]combtype.GroupSummary, combtype.PageInfo, error) {
	return b.st.GroupsPage(ctx, b.tenant, pg)
}

// QueueGroupListPage is GroupListPage over the queue named queue alone:
// the groups on it, none when there is no such queue.
func (b *Broker) QueueGroupListPage(ctx context.Context, queue string, pg combtype.Page) ([]combtype.GroupSummary, combtype.PageInfo, error) {
	return b.st.QueueGroupsPage(ctx, b.tenant, queue, pg)
}

// GroupLagPage is GroupLag and GroupOffsets for the page pg of the group's
// cursors, in partition creation order; PageInfo.Next is the After of the
// next page.
func (b *Broker) GroupLagPage(ctx context.Context, group string, pg combtype.Page) ([]combtype.PartitionLag, map[string]combtype.CursorOffsets, combtype.PageInfo, error) {
	return b.st.GroupPage(ctx, b.tenant, group, pg)
}

// GroupLaggingPage is GroupLagging a page at a time (Limit and Offset),
// oldest first.
func (b *Broker) GroupLaggingPage(ctx context.Context, minLag time.Duration, pg combtype.Page) ([]combtype.PartitionLag, combtype.PageInfo, error) {
	return b.st.LaggingPage(ctx, b.tenant, minLag, pg)
}
