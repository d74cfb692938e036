package store

import (
	"math"
	"slices"
)
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

// exactLagValues is how many figures a lagSummer keeps one by one
// (512 KiB) before it counts them in buckets.
const exactLagValues = 1 << 16

// lagSubBuckets is the number of buckets per power of two: a bucket's
// middle is within 1/512 of every value in it.
const lagSubBuckets = 256

// lagSummer summarises a lag figure over every cursor in bounded memory.
// A tenant's cursors, implied ones included, are partitions × groups: a
// million partitions read by 42 groups held 670 MB of figures to sort
// for an exact median. Avg, Min and Max stay exact; the median is exact
// up to exactLagValues figures and past them the middle of the
// logarithmic bucket holding it (within 0.2%, and within [Min, Max]).
type lagSummer struct {
	// whole is set for figures that are whole numbers (offsets): a bucket
	// middle is rounded, which gives back the figure itself below 512.
	whole         bool
	n             int64
	sum, min, max float64
	vals          []float64       // every figure while n <= exactLagValues
	buckets       map[int32]int64 // figures per bucket (lagBucket) once past it
}

func (l *lagSummer) add(v float64) {
	if l.n == 0 || v < l.min {
		l.min = v
	}
	if l.n == 0 || v > l.max {
		l.max = v
	}
	l.n++
	l.sum += v
	if l.buckets == nil {
		if len(l.vals) < exactLagValues {
			l.vals = append(l.vals, v)
			return
		}
		l.buckets = make(map[int32]int64)
		for _, x := range l.vals {
			l.buckets[lagBucket(x)]++
		}
		l.vals = nil
	}
	l.buckets[lagBucket(v)]++
}

func (l *lagSummer) summary() combtype.LagSummary {
	if l.buckets == nil {
		return summarise(l.vals)
	}
	keys := make([]int32, 0, len(l.buckets))
	for k := range l.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// at returns the bucket middle of the figure of rank r (0-based).
	at := func(r int64) float64 {
		for _, k := range keys {
			if r < l.buckets[k] {
				v := lagBucketMiddle(k)
				if l.whole {
					v = math.Round(v)
				}
				return min(max(v, l.min), l.max)
			}
			r -= l.buckets[k]
		}
		return l.max
	}
	median := at(l.n / 2)
	if l.n%2 == 0 {
		median = (at(l.n/2-1) + median) / 2
	}
	return combtype.LagSummary{Avg: l.sum / float64(l.n), Median: median, Min: l.min, Max: l.max}
}

// lagBucket is the bucket of a figure: lagSubBuckets per power of two,
// in the order of the figures; every figure at or below zero (lags are
// never negative) shares the first.
func lagBucket(v float64) int32 {
	if v <= 0 || math.IsNaN(v) {
		return math.MinInt32
	}
	frac, exp := math.Frexp(v) // v = frac × 2^exp, frac in [0.5, 1)
	return int32(exp)*lagSubBuckets + int32((frac-0.5)*2*lagSubBuckets)
}

// lagBucketMiddle is the middle of bucket k's range of figures.
func lagBucketMiddle(k int32) float64 {
	if k == math.MinInt32 {
		return 0
	}
	exp, sub := k/lagSubBuckets, k%lagSubBuckets
	if sub < 0 { // Go's / truncates: keep sub in [0, lagSubBuckets)
		exp, sub = exp-1, sub+lagSubBuckets
	}
	frac := 0.5 + (float64(sub)+0.5)/(2*lagSubBuckets)
	return math.Ldexp(frac, int(exp))
}
