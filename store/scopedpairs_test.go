package store

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/clock"
)

// The readers of some queues' positions find the (group, queue) pairs of
// those queues through indexes, never by reading every cursor row of the
// file: a condition on the pairs written outside their UNION is not pushed
// into it, and a lag page of a small queue read the cursors of a queue of
// a million partitions beside it.
func TestPositionsOfSomeQueuesReadOnlyTheirRows(t *testing.T) {
	s := openTestStore(t, clock.NewManual(time.Unix(1e9, 0)))
	for name, query := range map[string]string{
		"lag page, queues by id":   laggingLiveQuery,
		"lagging, a tenant":        partitionLagQuery(tenantQueues("?1"), ""),
		"one group, a tenant":      partitionLagQuery(tenantQueues("?1"), "?2"),
		"metrics, queues by id":    `SELECT COUNT(*) FROM ` + groupPositionsIn(`(SELECT value FROM json_each(?1))`, ""),
		"offsets, a tenant, group": `SELECT COUNT(*) FROM ` + groupPositionsIn(tenantQueues("?1"), "?2"),
		"delete, one queue, group": `SELECT COUNT(*) FROM ` +
			groupPositionsIn(`(SELECT id FROM queues WHERE tenant = ?2 AND (?3 = '' OR name = ?3))`, "?1"),
	} {
		plan := queryPlan(t, s, query, "[1]", "g", "q", "[1]")
		// The pairs lead: a condition on q or p must not make SQLite walk
		// every partition of a tenant and ask for the pairs of each.
		if top := topLevelPlan(t, s, query, "[1]", "g", "q", "[1]"); !slices.Equal(top[:min(2, len(top))], []string{"CO-ROUTINE gq", "SCAN gq"}) {
			t.Errorf("%s: the plan is not led by the pairs:\n%s", name, strings.Join(plan, "\n"))
		}
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") && !strings.HasPrefix(step, "SCAN json_each") && step != "SCAN gq" {
				t.Errorf("%s: the plan scans a table (%s):\n%s", name, step, strings.Join(plan, "\n"))
			}
		}
	}
}

// topLevelPlan is the outermost steps of query's plan, in order.
func topLevelPlan(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.rdb.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var top []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		if parent == 0 {
			top = append(top, detail)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return top
}
