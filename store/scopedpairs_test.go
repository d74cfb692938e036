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
		"delete, one queue, group": `SELECT COUNT(*) FROM ` + groupPositionsIn(groupDeleteScope, "?1"),
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
	var top []string
	for _, step := range planSteps(t, s, query, args...) {
		if step.parent == 0 {
			top = append(top, step.detail)
		}
	}
	return top
}

// Deleting a group from every queue of a tenant finds its rows through its
// own, not through every partition of the tenant: a group with one row
// beside a queue of a million partitions took 0.9 s of the writer.
func TestDeletingAGroupEverywhereReadsItsOwnRows(t *testing.T) {
	s := openTestStore(t, clock.NewManual(time.Unix(1e9, 0)))
	plan := queryPlan(t, s, deleteGroupCursors, "g", "", "")
	for _, step := range plan {
		if strings.Contains(step, "partitions_queue_id") || (strings.HasPrefix(step, "SCAN ") && !strings.HasPrefix(step, "SCAN json_each")) {
			t.Errorf("the delete walks partitions (%s):\n%s", step, strings.Join(plan, "\n"))
		}
	}
	if !slices.ContainsFunc(plan, func(step string) bool { return strings.Contains(step, "cursors_group (group_name=?)") }) {
		t.Errorf("the delete does not find the group's rows by its name:\n%s", strings.Join(plan, "\n"))
	}
}
