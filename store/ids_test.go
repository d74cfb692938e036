package store_test

import (
	"sort"
	"testing"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/store"
)

func TestMessageIDsSortInOffsetOrderWithinAPartition(t *testing.T) {
	p := uuid.NewString()
	offsets := []int64{0, 1, 2, 9, 10, 15, 16, 255, 256, 65535, 65536, 1 << 40, 1<<56 - 1}
	ids := make([]string, len(offsets))
	for i, off := range offsets {
		ids[i] = store.MessageID(p, off)
		u, err := uuid.Parse(ids[i])
		if err != nil {
			t.Fatalf("offset %d: id %q is not a UUID: %v", off, ids[i], err)
		}
		if u.Version() != 8 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("offset %d: id %s is version %d variant %v, want 8 and RFC 4122", off, ids[i], u.Version(), u.Variant())
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatalf("ids do not sort in offset order: %v", ids)
	}
	if store.MessageID(p, 7) != store.MessageID(p, 7) {
		t.Fatal("the id of one position is not stable")
	}
}

func TestMessageIDsDifferAcrossPartitionsAndDatabases(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		// Every database's first partition gets its own random uuid, so the
		// first message of each must get its own id.
		id := store.MessageID(uuid.NewString(), 0)
		if seen[id] {
			t.Fatalf("two partitions handed out %s for their first message", id)
		}
		seen[id] = true
	}
}
