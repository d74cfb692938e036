package store_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// Once a push is answered the writer holds nothing of it: a server that
// took one 32 MiB push must not keep those 32 MiB until other writes come,
// or two large pushes in a row hold twice the memory one needs.
func TestAnAnsweredPushIsNotHeldInMemory(t *testing.T) {
	st := combtest.MustOpenStore(t, combtest.Options{})
	payload := []byte(`"` + strings.Repeat("x", 32<<20) + `"`)
	if _, err := st.Push(context.Background(), "", []combtype.PushItem{{Queue: "big", Payload: payload}}); err != nil {
		t.Fatal(err)
	}
	payload = nil
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.HeapAlloc > 16<<20 {
		t.Fatalf("%d MiB of heap in use after a 32 MiB push was answered", m.HeapAlloc>>20)
	}
}
