package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/comb-broker/comb/store/segment"
)

// txnKey is the dedup index's compact key for a transactionId. The index
// holds 8-byte integers instead of 36-character texts, which made it the
// largest table and most of SQLite's work per push. A key is not unique to
// one id, so every key found is checked against the id stored in the
// frame at its offset (txnOffsets): only a hit costs that read.
//
// A canonical UUID (what the SDKs and comb generate) keeps its first 48
// bits, the time of a version 7 id, above 15 bits of a hash of the whole
// text, so keys grow with time across all partitions and the index, which
// leads with the key, takes a commit's keys at its right edge. Any other
// text is hashed.
func txnKey(s string) int64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	sum := h.Sum64()
	if hi, ok := uuidHigh48(s); ok {
		return int64(hi<<15 | sum&0x7fff)
	}
	return int64(sum >> 1)
}

// uuidHigh48 parses the first 12 hex digits of a lowercase canonical UUID.
func uuidHigh48(s string) (uint64, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return 0, false
	}
	var v uint64
	for i := range 13 {
		if i == 8 {
			continue
		}
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// appendTxnKeys appends the keys of ids as a JSON array of integers.
func appendTxnKeys(buf []byte, ids []string) []byte {
	buf = append(buf, '[')
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, txnKey(id), 10)
	}
	return append(buf, ']')
}

// txnOffsets returns which of ids partition holds, with their offsets: one
// probe of the key index for all of them, then the ids stored at the
// offsets found, read from their segments, decide.
//
// A key found in a segment that fails its checksum or does not decode
// cannot be told from another id's key, so the id is not found there.
// That is what every caller needs: a push stores the message again (the
// copy it would have been a duplicate of is unreadable), an ack or a
// lookup answers not found, and none fails for ever on one damaged
// segment. Inside the writer the segment is also put aside, as a pop
// that meets it puts it aside (see setAside); on a reader it is left to
// the caller (txnOffsetsDamaged).
func txnOffsets(ctx context.Context, db querier, partitionID int64, ids []string) (map[string]int64, error) {
	var damaged []*segmentError
	found, err := txnOffsetsDamaged(ctx, db, partitionID, ids, &damaged)
	if err != nil {
		return nil, err
	}
	if w, ok := db.(*wtx); ok {
		for _, bad := range damaged {
			if err := w.setAside(bad); err != nil {
				return nil, err
			}
		}
	}
	return found, nil
}

// txnOffsetsDamaged is txnOffsets, appending the damaged segments it met
// to damaged instead of putting them aside.
func txnOffsetsDamaged(ctx context.Context, db querier, partitionID int64, ids []string, damaged *[]*segmentError) (map[string]int64, error) {
	found := map[string]int64{}
	if len(ids) == 0 {
		return found, nil
	}
	rows, err := db.QueryContext(ctx,
		// IN (subquery) makes SQLite probe the primary key once per
		// (key, partition).
		`SELECT offset FROM txids WHERE partition_id = +?2 AND txn_key IN (SELECT value FROM json_each(?1))`,
		string(appendTxnKeys(make([]byte, 0, 20*len(ids)), ids)), partitionID)
	if err != nil {
		return nil, fmt.Errorf("look up dedup keys: %w", err)
	}
	var offsets []int64
	for rows.Next() {
		var off int64
		if err := rows.Scan(&off); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan dedup key: %w", err)
		}
		offsets = append(offsets, off)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up dedup keys: %w", err)
	}
	if len(offsets) == 0 {
		return found, nil
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	err = txnIDsAt(ctx, db, partitionID, offsets, damaged, func(off int64, txn string) {
		if want[txn] {
			found[txn] = off
		}
	})
	return found, err
}

// txnIDsAt calls fn with the transactionId stored at each of offsets that
// is still in the log and readable; the damaged segments met are appended
// to damaged. Offsets close together are read with one scan of their
// segments; payloads are neither copied nor decrypted.
func txnIDsAt(ctx context.Context, db querier, partitionID int64, offsets []int64, damaged *[]*segmentError, fn func(off int64, txn string)) error {
	slices.Sort(offsets)
	offsets = slices.Compact(offsets)
	const gap = 1024 // offsets further apart than this start a new scan
	for start := 0; start < len(offsets); {
		end := start + 1
		for end < len(offsets) && offsets[end]-offsets[end-1] <= gap {
			end++
		}
		run := offsets[start:end]
		err := scanTxnIDs(ctx, db, partitionID, run[0], run[len(run)-1], func(off int64, txn string) {
			if _, ok := slices.BinarySearch(run, off); ok {
				fn(off, txn)
			}
		}, damaged)
		if err != nil {
			return err
		}
		start = end
	}
	return nil
}

// scanTxnIDs reads the transactionIds of the frames at offsets [from, to].
// A segment that fails its checksum or does not decode is skipped, its
// frames reported to nobody; it is appended to damaged when that is not
// nil, and otherwise ends the scan with its *segmentError, which wraps
// ErrCorrupt.
func scanTxnIDs(ctx context.Context, db querier, partitionID, from, to int64, fn func(off int64, txn string), damaged ...*[]*segmentError) error {
	rows, err := db.QueryContext(ctx, `SELECT base_offset, frame_count, codec, raw_size, checksum, data FROM segments
		WHERE partition_id = +?1 AND base_offset <= ?3 AND base_offset >= COALESCE(
			(SELECT base_offset FROM segments WHERE partition_id = +?1 AND base_offset <= ?2 ORDER BY base_offset DESC LIMIT 1), 0)
		ORDER BY base_offset`, partitionID, from, to)
	if err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var base, count, sum int64
		var codec, rawSize int
		var data []byte
		if err := rows.Scan(&base, &count, &codec, &rawSize, &sum, &data); err != nil {
			return fmt.Errorf("scan segment: %w", err)
		}
		ids, err := segmentTxnIDs(codec, rawSize, uint32(sum), data, count)
		if err != nil {
			bad := &segmentError{partitionID: partitionID, base: base, count: count, err: err}
			if len(damaged) == 0 || damaged[0] == nil {
				return bad
			}
			*damaged[0] = append(*damaged[0], bad)
			continue
		}
		for i, txn := range ids {
			if off := base + int64(i); off >= from && off <= to {
				fn(off, string(txn))
			}
		}
	}
	return rows.Err()
}

// segmentTxnIDs verifies a stored segment and returns the transactionIds
// of its count frames, as slices of the packed frames. A segment holding
// fewer or more frames than its row says is damaged: what it holds cannot
// be matched to offsets. Its errors match ErrCorrupt.
func segmentTxnIDs(codec, rawSize int, checksum uint32, data []byte, count int64) ([][]byte, error) {
	if !credibleFrameCount(count, int64(len(data))) {
		// Sized by it, the slice below took the writer down: a frame
		// count edited to 2^63-1 panicked the push of a transactionId
		// stored in that partition (makeslice: cap out of range).
		return nil, fromCodec(fmt.Errorf("%w: %d frames recorded for %d stored bytes", segment.ErrCorrupt, count, len(data)))
	}
	ids := make([][]byte, 0, count)
	err := segment.TxnIDs(segment.Encoded{Codec: codec, RawSize: rawSize, Checksum: checksum, Data: data}, int(count),
		func(_ int, txn []byte) { ids = append(ids, txn) })
	if err != nil {
		return nil, fromCodec(err)
	}
	return ids, nil
}
