package store

import "github.com/comb-broker/comb/combtype"

// rowCache keeps, between commits, the queue and partition rows the
// writer looked up by name, as they were when their commit succeeded.
// Every push resolves its queue and partition; for pushes of one message
// over many partitions, reading both rows again in every commit was a
// sixth of the writer's work.
//
// Only the writer changes these rows, and it keeps the cache true: a
// push's own changes (new rows, the partition's last offset) are kept
// with its commit; any other change to them (configure, retention moving
// log_start, a queue delete, a savepoint rolled back) marks the
// transaction stale (rowsChanged), which stops lookups from the cache for
// the rest of it and forgets the whole cache at commit; a commit that
// fails forgets it too. Only the writer goroutine touches it.
type rowCache struct {
	queues map[queueKey]combtype.Queue
	parts  map[partKey]combtype.Partition
	segs   segCache // the segments claims decoded last (segcache.go)
}

// maxCachedRows bounds the cache, so a producer cycling through endless
// queue or partition names cannot grow it without end.
const maxCachedRows = 4096

// rowsChanged marks that this transaction changed queue or partition rows
// by other means than pushing.
func (w *wtx) rowsChanged() {
	w.stale = true
	w.s.queuesChanged()
	clear(w.claimed)
	clear(w.claimedDead)
}

// keep records the rows w looked up and changed, once w has committed.
func (c *rowCache) keep(w *wtx) {
	if w.stale {
		c.forget()
		return
	}
	if c.queues == nil || len(c.queues)+len(w.queues) > maxCachedRows || len(c.parts)+len(w.partitions) > maxCachedRows {
		c.queues, c.parts = map[queueKey]combtype.Queue{}, map[partKey]combtype.Partition{}
	}
	for k, q := range w.queues {
		c.queues[k] = *q
	}
	for k, p := range w.partitions {
		c.parts[k] = *p
	}
}

func (c *rowCache) forget() {
	c.queues, c.parts = nil, nil
	c.segs.forget()
}
