package store_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// pushTo pushes one message of each payload to queue q.
func pushTo(t *testing.T, s *store.Store, payloads ...string) {
	t.Helper()
	items := make([]combtype.PushItem, len(payloads))
	for i, p := range payloads {
		items[i] = combtype.PushItem{Queue: "q", Payload: []byte(`"` + p + `"`)}
	}
	if _, err := s.Push(context.Background(), "", items); err != nil {
		t.Fatalf("push: %v", err)
	}
}

// popIDs pops every message of queue q for a new group and returns their
// ids by payload.
func popIDs(t *testing.T, s *store.Store, group string) map[string]string {
	t.Helper()
	res, err := s.Pop(context.Background(), "", combtype.PopRequest{Queue: "q", Group: group, Batch: 100})
	if err != nil {
		t.Fatalf("pop for %s: %v", group, err)
	}
	ids := map[string]string{}
	for _, m := range res.Messages {
		ids[strings.Trim(string(m.Payload), `"`)] = m.ID
	}
	return ids
}

// A backup put back in place goes on from the backup's offsets. The ids
// it hands out must not be ids its source handed out after the backup
// was taken: a consumer that remembers the ids it processed would skip
// the new messages. Put back by RestoreFile or by sqlite3's .restore into
// the served file, the copy derives its ids anew; the source's ids are
// what they were, and the copy's stay what they are when it is opened
// again.
func TestACopyPutBackHandsOutNoIDItsSourceHandedOutAfterIt(t *testing.T) {
	ctx := context.Background()
	open := func(path string) *store.Store {
		s, err := store.Open(ctx, store.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// handed pushes a, b, c, backs the file up, pushes d and e, and
	// returns the ids the file handed out.
	handed := func(t *testing.T, s *store.Store, backup string) map[string]string {
		pushTo(t, s, "a", "b", "c")
		first := popIDs(t, s, "g1")
		if err := s.Backup(ctx, backup); err != nil {
			t.Fatal(err)
		}
		pushTo(t, s, "d", "e")
		ids := popIDs(t, s, "g2")
		for p, id := range first {
			if ids[p] != id {
				t.Fatalf("the backup changed the source's id of %s: %s, then %s", p, id, ids[p])
			}
		}
		if len(ids) != 5 {
			t.Fatalf("ids handed out: %v", ids)
		}
		return ids
	}
	reused := func(t *testing.T, how string, before, after map[string]string) {
		t.Helper()
		old := map[string]string{}
		for p, id := range before {
			old[id] = p
		}
		if len(after) != 5 || after["f"] == "" || after["g"] == "" {
			t.Fatalf("%s: ids after = %v", how, after)
		}
		for p, id := range after {
			if was, ok := old[id]; ok {
				t.Errorf("%s: %s has the id %s, which the source handed out for %s", how, p, id, was)
			}
		}
	}

	t.Run("RestoreFile", func(t *testing.T) {
		dir := t.TempDir()
		path, backup := filepath.Join(dir, "comb.db"), filepath.Join(dir, "b.db")
		s := open(path)
		before := handed(t, s, backup)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := store.RestoreFile(ctx, path, backup, nil); err != nil {
			t.Fatal(err)
		}
		r := open(path)
		pushTo(t, r, "f", "g")
		after := popIDs(t, r, "g3")
		reused(t, "restored", before, after)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		again := open(path)
		defer again.Close()
		if got := popIDs(t, again, "g4"); !equalIDs(got, after) {
			t.Fatalf("ids after a reopen = %v, want %v", got, after)
		}
	})

	t.Run("sqlite3 .restore into the served file", func(t *testing.T) {
		dir := t.TempDir()
		path, backup := filepath.Join(dir, "comb.db"), filepath.Join(dir, "b.db")
		s := open(path)
		defer s.Close()
		before := handed(t, s, backup)
		if out, err := exec.Command(combtest.SQLite3(t), "-cmd", ".timeout 10000", path, ".restore "+backup).CombinedOutput(); err != nil {
			t.Fatalf("sqlite3 .restore: %v\n%s", err, out)
		}
		pushTo(t, s, "f", "g")
		reused(t, "after .restore", before, popIDs(t, s, "g3"))
	})
}

func equalIDs(a, b map[string]string) bool {
	ka, kb := make([]string, 0, len(a)), make([]string, 0, len(b))
	for k, v := range a {
		ka = append(ka, k+"="+v)
	}
	for k, v := range b {
		kb = append(kb, k+"="+v)
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}
