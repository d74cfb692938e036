package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestAWriteRefusedForSpaceReportsOneFailureNotASpuriousRollback fills a
// database to its page cap. SQLite rolls a transaction back by itself when
// a write fails for lack of space, so the writer's own ROLLBACK then finds
// none: that must not be reported as a second failure ("cannot rollback -
// no transaction is active"), which retention logged every sweep.
func TestAWriteRefusedForSpaceReportsOneFailureNotASpuriousRollback(t *testing.T) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "comb.db"), MaxDBBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rnd := rand.New(rand.NewPCG(7, 8))
	var full error
	for b := 0; b < 1000 && full == nil; b++ {
		items := make([]PushItem, 20)
		for i := range items {
			raw := make([]byte, 2000)
			for j := range raw {
				raw[j] = 'a' + byte(rnd.IntN(26))
			}
			payload, _ := json.Marshal(string(raw))
			items[i] = PushItem{Queue: "q", TxnID: fmt.Sprintf("t-%d-%d", b, i), Payload: payload}
		}
		_, full = s.Push(context.Background(), "", items)
	}
	if !errors.Is(full, ErrFull) {
		t.Fatalf("push past the cap: %v", full)
	}
	if strings.Contains(full.Error(), "rollback") {
		t.Fatalf("a write refused for space reports a second failure: %v", full)
	}
}
