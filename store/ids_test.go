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

// No column stores a message's id: it is derived from the position each
// time. An id handed out by an earlier version (held by a consumer that
// acks with it after an upgrade) must name the same message, so the
// derivation never changes.
func TestMessageIDsAreDerivedAsInEveryEarlierVersion(t *testing.T) {
	const p = "0192f0c4-8c1e-7a3b-9d2e-5f6a7b8c9d0e"
	for off, want := range map[int64]string{
		0:         "82203f5a-26c5-83c3-a800-000000000000",
		1:         "82203f5a-26c5-83c3-a800-000000000001",
		300:       "82203f5a-26c5-83c3-a800-00000000012c",
		1<<56 - 1: "82203f5a-26c5-83c3-a8ff-ffffffffffff",
	} {
		if got := store.MessageID(p, off); got != want {
			t.Errorf("offset %d: id %s, want %s", off, got, want)
		}
	}
}
