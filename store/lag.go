package store

import "slices"
import "github.com/comb-broker/comb/combtype"

// Lag arithmetic. A partition stores last_offset - log_start + 1 messages.
// A cursor wants next = max(committed+1, log_start): frames evicted by
// retention are not lag. Offset lag is last_offset-next+1 when positive;
// time lag is the age of the segment holding next, the one segment a lag
// figure ever reads, found by the unique (partition_id, base_offset) index.
// Nothing here scans messages.
//
// Each figure is spelled once in SQL, over partition alias p and cursor
// alias c, and the ones Go computes too have their twin next to them.
const (
	// storedExpr is the number of messages p stores (storedCount).
	storedExpr = `MAX(p.last_offset - p.log_start + 1, 0)`
	// nextExpr is the first offset c still wants (nextOffset).
	nextExpr = `MAX(c.committed + 1, p.log_start)`
	// lagExpr is c's offset lag on p.
	lagExpr = `MAX(p.last_offset - ` + nextExpr + ` + 1, 0)`
	// pendingExpr is true when p holds something c still wants.
	pendingExpr = `p.last_offset >= ` + nextExpr
	// oldestExpr is the created_at of the oldest unconsumed segment, NULL
	// when nothing is pending.
	oldestExpr = `CASE WHEN ` + pendingExpr + ` THEN (SELECT s.created_at FROM segments s
		WHERE s.partition_id = p.id AND s.base_offset <= ` + nextExpr + ` ORDER BY s.base_offset DESC LIMIT 1) END`
)

// storedCount is storedExpr in Go.
func storedCount(p *combtype.Partition) int64 { return max(p.LastOffset-p.LogStart+1, 0) }

// nextOffset is nextExpr in Go: a cursor left below the retention
// watermark resumes at the first offset that exists.
func nextOffset(committed, logStart int64) int64 { return max(committed+1, logStart) }

func summarise(vals []float64) combtype.LagSummary {
	if len(vals) == 0 {
		return combtype.LagSummary{}
	}
	slices.Sort(vals)
	var sum float64
	for _, v := range vals {
		sum += v
	}
	median := vals[len(vals)/2]
	if len(vals)%2 == 0 {
		median = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
	}
	return combtype.LagSummary{Avg: sum / float64(len(vals)), Median: median, Min: vals[0], Max: vals[len(vals)-1]}
}
