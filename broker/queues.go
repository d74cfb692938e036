package broker

import (
	"context"

	"github.com/comb-broker/comb/combtype"
)

// Queues and the resource views over them. They read through the engine's
// reader pool; the writes among them go through its single writer.

// QueueConfigure creates a queue or replaces all of its options, and
// returns it with its default partition. Options outside their ranges (see
// ValidateOptions) are refused with a *RangeError and nothing is written.
func (b *Broker) QueueConfigure(ctx context.Context, req combtype.ConfigureRequest) (*combtype.Queue, *combtype.Partition, error) {
	if err := ValidateOptions(req.Options); err != nil {
		return nil, nil, err
	}
	if err := checkConfigure(req); err != nil {
		return nil, nil, err
	}
	return b.st.Configure(ctx, b.tenant, req)
}

// QueueDelete removes a queue with all its messages, cursors, snapshots'
// hold on it and DLQ rows; a queue of that name created afterwards starts
// empty. It reports whether the queue existed.
func (b *Broker) QueueDelete(ctx context.Context, name string) (bool, error) {
	existed, err := b.st.DeleteQueue(ctx, b.tenant, name)
	if existed {
		b.metrics.forget(b.tenant, name)
	}
	return existed, err
}

// QueueNames lists the names of the tenant's queues, in creation order;
// empty for a tenant with none.
func (b *Broker) QueueNames(ctx context.Context) ([]string, error) {
	return b.st.QueueNames(ctx, b.tenant)
}

// QueueStats returns one queue with per-partition counts, or
// combtype.ErrQueueNotFound.
func (b *Broker) QueueStats(ctx context.Context, name string) (*combtype.QueueStats, error) {
	return b.st.QueueStats(ctx, b.tenant, name)
}

// QueueList lists the tenant's queues matching f (Namespace, Task, Limit,
// Offset), newest first, with their totals (PartitionCount, Counts,
// Evicted) but not their partitions; empty when none match. A queue above
// Options.LiveTotalsPartitions answers from a sum made in the background
// (Summarized, StatsAge), as in QueuePage.
func (b *Broker) QueueList(ctx context.Context, f combtype.QueueFilter) ([]*combtype.QueueStats, error) {
	return b.st.ListQueueStats(ctx, b.tenant, f)
}

// QueueDepths returns every queue's backlog and group lags, of every
// tenant: what a metrics scrape reports.
func (b *Broker) QueueDepths(ctx context.Context) ([]combtype.QueueDepth, error) {
	return b.st.QueueDepths(ctx)
}

// FirstQueueDepths is QueueDepths of the first n queues by name, then
// tenant (all of them when n <= 0), and how many queues are past them:
// a metrics scrape that writes series for a bounded number of queues
// reads no more of them.
func (b *Broker) FirstQueueDepths(ctx context.Context, n int) ([]combtype.QueueDepth, int, error) {
	return b.st.FirstQueueDepths(ctx, n)
}

// StatsOverview summarises the tenant's queues, messages and lag.
func (b *Broker) StatsOverview(ctx context.Context) (*combtype.Overview, error) {
	return b.st.Overview(ctx, b.tenant)
}

// StatsSummary returns the tenant's Summary: the overview and every
// queue's totals. Above Options.LiveSummaryPartitions it comes from a sum
// made in the background (Summarized, StatsAge). It is shared: do not
// modify it.
func (b *Broker) StatsSummary(ctx context.Context) (*combtype.Summary, error) {
	return b.st.Summary(ctx, b.tenant)
}

// QueuePage returns the page (Limit, Offset) of the tenant's queues
// matching f (Namespace, Task, Name, Search) in the order f.Sort names
// (combtype.QueueSorts; "" newest first), with their totals but not their
// partitions, and how many match (PageInfo.Total). An unknown Sort is
// combtype.ErrInvalid.
func (b *Broker) QueuePage(ctx context.Context, f combtype.QueueFilter) ([]*combtype.QueueStats, combtype.PageInfo, error) {
	return b.st.QueuePage(ctx, b.tenant, f)
}

// LeaseCounts counts the live leases on the tenant's queues matching f
// (Namespace, Task, Name).
func (b *Broker) LeaseCounts(ctx context.Context, f combtype.QueueFilter) (combtype.LeaseCounts, error) {
	return b.st.LeaseCounts(ctx, b.tenant, f)
}

// StatsByNamespace sums the tenant's queues per namespace.
func (b *Broker) StatsByNamespace(ctx context.Context) ([]combtype.GroupedStats, error) {
	return b.st.NamespaceStats(ctx, b.tenant)
}

// StatsByTask sums the tenant's queues per task.
func (b *Broker) StatsByTask(ctx context.Context) ([]combtype.GroupedStats, error) {
	return b.st.TaskStats(ctx, b.tenant)
}

// NamespacePage is the page pg of StatsByNamespace, by name (Limit 0: all
// of it), and how many namespaces there are (PageInfo.Total).
func (b *Broker) NamespacePage(ctx context.Context, pg combtype.Page) ([]combtype.GroupedStats, combtype.PageInfo, error) {
	return b.st.NamespacePage(ctx, b.tenant, pg)
}

// TaskPage is the page pg of StatsByTask, by name (Limit 0: all of it),
// and how many tasks there are (PageInfo.Total).
func (b *Broker) TaskPage(ctx context.Context, pg combtype.Page) ([]combtype.GroupedStats, combtype.PageInfo, error) {
	return b.st.TaskPage(ctx, b.tenant, pg)
}

// StatsIngest counts the messages committed per time bucket of f, every
// bucket present; a series with no bucket or ending before it starts is
// refused with combtype.ErrInvalid.
func (b *Broker) StatsIngest(ctx context.Context, f combtype.SeriesFilter) ([]combtype.SeriesPoint, error) {
	return b.st.IngestSeries(ctx, b.tenant, f)
}

// QueueSummaries lists the tenant's queues matching f, newest first, with
// their summed counts and partition counts (QueueStats.PartitionCount) but
// not their partitions: one aggregate per queue, whatever its size.
func (b *Broker) QueueSummaries(ctx context.Context, f combtype.QueueFilter) ([]*combtype.QueueStats, error) {
	return b.st.QueueSummaries(ctx, b.tenant, f)
}

// QueueStatsPage returns one queue with the counts of all its partitions
// and the page pg of its partitions, in creation order; PageInfo.Total is
// its partition count and PageInfo.Next the After of the next page. An
// unknown queue is combtype.ErrQueueNotFound, a malformed After
// combtype.ErrInvalid.
func (b *Broker) QueueStatsPage(ctx context.Context, name string, pg combtype.Page) (*combtype.QueueStats, combtype.PageInfo, error) {
	return b.st.QueueStatsPage(ctx, b.tenant, name, pg)
}
