package store

import "time"

// MeasureDiskEveryCommit makes every commit that carries payloads measure
// the free space, as before a measure was reused for diskMeasureEvery: the
// reserve's clock moves on by that much at each reading. Call it before the
// store is used.
func (s *Store) MeasureDiskEveryCommit() {
	t := time.Now()
	s.disk.now = func() time.Time {
		t = t.Add(diskMeasureEvery)
		return t
	}
}

// SetDedupJSON makes every commit write its dedup rows as one JSON array,
// as before a few went as bound values. Call it before the store is used.
func (s *Store) SetDedupJSON(on bool) { s.dedupJSON = on }

// SetPartitionRowsEach makes every commit advance each partition's row in
// a statement of its own, as before they went together. Call it before
// the store is used.
func (s *Store) SetPartitionRowsEach(on bool) { s.partitionRowsEach = on }
