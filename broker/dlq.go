package broker

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// The dead-letter queue: copies of messages that failed past their
// queue's retryLimit or were acked as "dlq". Retention never removes them;
// an operator lists, re-drives or purges them.

// DLQList returns one page of the tenant's dead-lettered messages matching
// f, newest failure first, and how many match in all. A page holds at most
// f.Limit entries (combtype.DefaultDLQLimit when <= 0, at most
// combtype.MaxDLQLimit) and stops after 4 MiB of payloads; an unknown
// queue, group or partition matches nothing (an empty page, 0).
func (b *Broker) DLQList(ctx context.Context, f combtype.DLQFilter) ([]combtype.DLQEntry, int64, error) {
	return b.st.ListDLQ(ctx, b.tenant, f)
}

// DLQCount counts the tenant's dead letters matching f; 0 for queues that
// do not exist. A zero From or To leaves that side unbounded.
func (b *Broker) DLQCount(ctx context.Context, f combtype.DLQCountFilter) (int64, error) {
	if f.To.IsZero() {
		f.To = time.UnixMicro(math.MaxInt64) // the zero time would count nothing
	}
	return b.st.CountDLQ(ctx, b.tenant, f.Queues, f.From, f.To)
}

// DLQRedrive appends dead-lettered messages back to their queue as new
// messages and removes their DLQ rows, in one bounded commit (req.Limit
// messages, combtype.DefaultRedriveLimit when <= 0); call again while the
// result's Remaining is above 0. Every group sees a re-driven message as
// new, and rows of several groups for one message become one message.
// Each new message's transactionId is the original's with
// ":redrive:<row id>" appended, so a re-drive sent again after a lost
// answer is counted in Duplicates, not appended twice. An unknown queue is
// combtype.ErrQueueNotFound; nothing matching is a result of zeros.
func (b *Broker) DLQRedrive(ctx context.Context, req combtype.RedriveRequest) (*combtype.RedriveResult, error) {
	if len(req.IDs) > combtype.MaxRedriveIDs {
		return nil, TooManyRedriveIDs(len(req.IDs))
	}
	res, err := b.st.RedriveDLQ(ctx, b.tenant, req)
	if err == nil {
		b.metrics.pushed(b.tenant, res.Queue, int64(res.Redriven))
	}
	return res, err
}

// DLQPurge deletes dead-lettered rows matching req for good, in one
// bounded commit (req.Limit rows, combtype.DefaultPurgeLimit when <= 0);
// call again while the result's Remaining is above 0. A request with no
// filter is refused with combtype.ErrInvalid unless req.All is set;
// nothing matching (an unknown queue) is a result of zeros.
func (b *Broker) DLQPurge(ctx context.Context, req combtype.PurgeRequest) (*combtype.PurgeResult, error) {
	return b.st.PurgeDLQ(ctx, b.tenant, req)
}

// TooManyRedriveIDs is the refusal of a re-drive naming more than
// combtype.MaxRedriveIDs ids; got may stop at combtype.MaxRedriveIDs+1.
func TooManyRedriveIDs(got int) error {
	return &InputError{Msg: fmt.Sprintf("a re-drive names at most %d ids (got more than %d); split them over several calls",
		combtype.MaxRedriveIDs, min(got-1, combtype.MaxRedriveIDs))}
}
