package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A panic in the writer's commit (a fault of comb's own code, as a frame
// count edited to 2^63-1 once caused) fails that commit, not the process:
// the op that panicked is answered with an error, the pushes committed
// beside it are kept, and the store goes on.
func TestAPanicInTheWritersCommitFailsOnlyItsOp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	var logs bytes.Buffer
	st := openLogged(t, path, slog.New(slog.NewTextHandler(&logs, nil)))
	defer st.Close()
	errs := make(chan error, 21)
	for i := range 20 {
		go func() {
			_, err := st.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "p" + strconv.Itoa(i), Payload: []byte(`1`)}})
			errs <- err
		}()
	}
	go func() { errs <- st.SubmitPanic(ctx) }()
	failed := 0
	for range 21 {
		if err := <-errs; err != nil {
			if !strings.Contains(err.Error(), "panicked") {
				t.Errorf("unexpected error: %v", err)
			}
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d writes failed, want the one that panicked", failed)
	}
	if st.Stats().WriterPanics.Load() == 0 || !strings.Contains(logs.String(), "a fault in an op") {
		t.Errorf("the panic was neither counted nor logged with its value:\n%s", logs.String())
	}
	pushN(t, st, "after", 1)
	if got := combtest.SQLite3Exec(t, path, `SELECT SUM(frame_count) FROM segments`); got != "21" {
		t.Errorf("%s messages stored, want 21", got)
	}
}
