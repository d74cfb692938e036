package store

import (
	"fmt"
	"maps"
	"sync"
	"unsafe"
	"weak"

	"github.com/comb-broker/comb/store/segment"
)

// segCache keeps, across commits, the segments claims decoded last. A pop
// of 100 ends inside a segment as often as not, and the group's next pop
// reads that segment again from the offset after; in a fan-out every
// group reads the same segments. Each read otherwise costs the segment's
// blob (its overflow pages), its checksum, its decompression and its
// frames. Stored segments never change: a row is only inserted or
// deleted (retention, a queue delete), and those mark the transaction
// stale (rowsChanged), which stops lookups here for the rest of it and
// forgets the cache at commit, as a failed commit does (rowCache). An
// entry is used only when the row read in the transaction has the same
// id, partition, base offset, frame count, time and checksum. The frames
// are shared: whoever is handed one copies it before changing it. Only
// the writer goroutine touches it.
type segCache struct {
	byID  map[int64]*cachedSegment
	ring  []*cachedSegment // in the order they were put: next is the oldest
	next  int
	bytes int
	// decoded counts the segments claimScan read whole and decoded.
	decoded int64
}

type cachedMeta struct {
	id, partitionID, base, count, createdAt, checksum int64
}

type cachedSegment struct {
	meta   cachedMeta
	frames []segment.Frame
	size   int // its decompressed bytes
}

// Bounds on what segCache holds: a few segments per partition being
// consumed, and few enough bytes to stay small beside SQLite's caches.
const (
	maxCachedSegments     = 64
	maxCachedSegmentBytes = 2 << 20
)

func (c *segCache) get(m cachedMeta) []segment.Frame {
	if e := c.byID[m.id]; e != nil && e.meta == m {
		return e.frames
	}
	return nil
}

func (c *segCache) put(m cachedMeta, frames []segment.Frame, size int) {
	if size > maxCachedSegmentBytes/4 {
		return
	}
	if c.byID == nil {
		c.byID = make(map[int64]*cachedSegment, maxCachedSegments)
		c.ring = make([]*cachedSegment, maxCachedSegments)
	}
	if c.byID[m.id] != nil {
		// The same id with other contents: the old entry goes.
		for i, e := range c.ring {
			if e != nil && e.meta.id == m.id {
				c.evict(i)
			}
		}
	}
	c.evict(c.next)
	for i := 1; c.bytes+size > maxCachedSegmentBytes && i < len(c.ring); i++ {
		c.evict((c.next + i) % len(c.ring))
	}
	e := &cachedSegment{meta: m, frames: frames, size: size}
	c.ring[c.next] = e
	c.next = (c.next + 1) % len(c.ring)
	c.byID[m.id] = e
	c.bytes += size
}

func (c *segCache) evict(i int) {
	e := c.ring[i]
	if e == nil {
		return
	}
	c.bytes -= e.size
	delete(c.byID, e.meta.id)
	c.ring[i] = nil
}

func (c *segCache) forget() {
	*c = segCache{decoded: c.decoded}
}

// A segment too large to keep (past a quarter of maxCachedSegmentBytes) was
// decoded by every claim and lookup that read it, and each held its copy
// until its reply was written: 30 pops at once, for groups of their own,
// of one 20 MB message held 615-678 MB, 30 lookups of it 250 MB. Its
// packed frames are kept weakly instead (sharedSegs, the store's, used by
// the writer and the readers alike): while one reader of them still
// holds them, the next unpacks its frames from the same bytes (verified
// when decoded, and never written), and once nothing holds them the
// collector takes them as before. An entry is used only for the same
// segment row: id, partition, base offset, frame count, time and
// checksum.
type sharedSegs struct {
	mu sync.Mutex
	m  map[int64]sharedSegment
}

type sharedSegment struct {
	meta cachedMeta
	raw  weak.Pointer[byte] // the first byte of the packed frames
	size int                // and their length
}

// maxSharedSegments bounds sharedSegs; the entries whose bytes are gone
// are dropped first.
const maxSharedSegments = 64

// sharedFrom is the least packed size of a segment shared rather than
// kept in segCache.
const sharedFrom = maxCachedSegmentBytes / 4

// get returns the frames of a segment shared, if its bytes are still held.
func (c *sharedSegs) get(m cachedMeta) []segment.Frame {
	c.mu.Lock()
	e, ok := c.m[m.id]
	var p *byte
	if ok && e.meta == m {
		if p = e.raw.Value(); p == nil {
			delete(c.m, m.id)
		}
	}
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	// The weak pointer is to the first byte of the bytes decoded, which
	// Value has just shown are still held whole.
	frames, err := segment.Unpack(unsafe.Slice(p, e.size), int(m.count))
	if err != nil {
		return nil
	}
	return frames
}

// put shares the packed frames raw of a segment too large to keep.
func (c *sharedSegs) put(m cachedMeta, raw []byte) {
	if len(raw) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int64]sharedSegment{}
	}
	if len(c.m) >= maxSharedSegments {
		maps.DeleteFunc(c.m, func(_ int64, e sharedSegment) bool { return e.raw.Value() == nil })
		if len(c.m) >= maxSharedSegments {
			clear(c.m)
		}
	}
	c.m[m.id] = sharedSegment{meta: m, raw: weak.Make(&raw[0]), size: len(raw)}
}

// claimScan is scanFrames for claims, through segCache: the rows of the
// segments are read first without their data, and only a segment not
// kept is read whole and decoded.
func (w *wtx) claimScan(partitionID, from, to int64, fn func(off, createdAt int64, f *segment.Frame) error) error {
	if w.stale {
		return w.s.scanFrames(w.ctx, w, partitionID, from, to, fn)
	}
	rows, err := w.QueryContext(w.ctx, `SELECT id, base_offset, frame_count, created_at, checksum FROM segments
		WHERE partition_id = +?1 AND base_offset <= ?3 AND base_offset >= COALESCE(
			(SELECT base_offset FROM segments WHERE partition_id = +?1 AND base_offset <= ?2 ORDER BY base_offset DESC LIMIT 1), 0)
		ORDER BY base_offset`, partitionID, from, to)
	if err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	var metas []cachedMeta
	for rows.Next() {
		m := cachedMeta{partitionID: partitionID}
		if err := rows.Scan(&m.id, &m.base, &m.count, &m.createdAt, &m.checksum); err != nil {
			rows.Close()
			return fmt.Errorf("scan segment: %w", err)
		}
		metas = append(metas, m)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	w.s.checkTiling(metas)
	cache := &w.s.rows.segs
	for _, m := range metas {
		frames := cache.get(m)
		if frames == nil {
			frames = w.s.shared.get(m)
		}
		if frames == nil {
			var codec, rawSize int
			var data []byte
			if err := w.QueryRowContext(w.ctx, `SELECT codec, raw_size, data FROM segments WHERE id = ?`, m.id).
				Scan(&codec, &rawSize, &data); err != nil {
				return fmt.Errorf("read segment: %w", err)
			}
			cache.decoded++
			var raw []byte
			if frames, raw, err = decodeSegmentRaw(codec, rawSize, uint32(m.checksum), data, int(m.count)); err != nil {
				return &segmentError{partitionID: partitionID, base: m.base, count: m.count, err: err}
			}
			if rawSize > sharedFrom {
				w.s.shared.put(m, raw)
			} else {
				cache.put(m, frames, rawSize)
			}
		}
		for i := range frames {
			off := m.base + int64(i)
			if off < from || off > to {
				continue
			}
			f := frames[i] // a copy: the cached frame stays as decoded
			if f.Payload, err = w.s.DecryptPayload(f.Payload); err != nil {
				return &segmentError{partitionID: partitionID, base: m.base, count: m.count,
					err: fmt.Errorf("frame %d: %w", off, err)}
			}
			if err := fn(off, m.createdAt, &f); err != nil {
				return err
			}
		}
	}
	return nil
}
