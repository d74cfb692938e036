package store

import (
	"context"
	"fmt"

	"github.com/comb-broker/comb/combtype"
)

// GroupOffsets returns the offsets of every cursor of group on tenant's
// queues (rows and implied: implied.go), keyed by partition uuid. It reads only, so read-only callers can
// see what a dry-run seek (a write route) would otherwise tell them.
func (s *Store) GroupOffsets(ctx context.Context, tenant, group string) (map[string]combtype.CursorOffsets, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT p.uuid, `+committedExpr+`, p.last_offset, p.log_start
		FROM `+groupPositionsIn(tenantQueues("?1"), "?2"), tenant, group)
	if err != nil {
		return nil, fmt.Errorf("read group offsets: %w", err)
	}
	defer rows.Close()
	out := map[string]combtype.CursorOffsets{}
	for rows.Next() {
		var uuid string
		var o combtype.CursorOffsets
		if err := rows.Scan(&uuid, &o.Committed, &o.LastOffset, &o.LogStart); err != nil {
			return nil, fmt.Errorf("scan group offsets: %w", err)
		}
		out[uuid] = o
	}
	return out, rows.Err()
}
