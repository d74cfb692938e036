package console_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
)

// TestConsoleShowsDamagedSegmentsSetAside damages a segment of a real file,
// lets a group pop past it, and finds it counted on the overview and listed
// under the dead letters, with a retry that reports the copy still damaged.
func TestConsoleShowsDamagedSegmentsSetAside(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	open := func() *broker.Broker {
		b, err := broker.Open(ctx, broker.Options{Path: path, RetentionInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := open()
	for s := range 3 {
		items := make([]combtype.PushItem, 5)
		for i := range items {
			items[i] = combtype.PushItem{Queue: "orders", Partition: "p1", TxnID: fmt.Sprintf("m%d", s*5+i),
				Payload: []byte(fmt.Sprintf(`{"n":%d}`, s*5+i))}
		}
		if _, err := b.Push(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	b.Drain()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 5`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	b = open()
	srv := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
	t.Cleanup(func() {
		b.Drain()
		srv.Close()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "orders", Group: "billing", Batch: 20, AutoAck: true})
	if err != nil || len(res.Messages) != 5 {
		t.Fatalf("pop before the damage: %v %+v", err, res)
	}
	if res, err = b.Pop(ctx, combtype.PopRequest{Queue: "orders", Group: "billing", Batch: 20, AutoAck: true}); err != nil || len(res.Messages) != 5 {
		t.Fatalf("pop past the damage: %v %+v", err, res)
	}

	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/"))
	p.wait("#ov-quarantined")
	if got := p.text("#ov-quarantined"); !strings.Contains(got, "1") || !strings.Contains(got, "damaged segments set aside") {
		t.Fatalf("overview quarantine card = %q", got)
	}
	p.show("#/dlq", "#dlq-quarantine tr[data-quarantine-id]")
	row := p.text("#dlq-quarantine tr[data-quarantine-id]")
	for _, want := range []string{"orders", "p1", "5–9", "billing", "checksum"} {
		if !strings.Contains(row, want) {
			t.Fatalf("quarantine row lacks %q: %q", want, row)
		}
	}
	p.shot("dlq-quarantine")
	p.click("#dlq-quarantine .quarantine-restore")
	p.click("#confirm-ok")
	p.until(`document.querySelector("#flash").textContent.includes("still cannot be read")`)
	if n := eval[int](p, `document.querySelectorAll("#dlq-quarantine tr[data-quarantine-id]").length`); n != 1 {
		t.Fatalf("rows after a refused retry = %d, want 1", n)
	}
}
