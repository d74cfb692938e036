package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/internal/browsertest"
)

func TestBrowserRendersAPageServedOnLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>t</title><p id="x"></p><script>document.getElementById("x").textContent = String(6*7)</script>`)
	}))
	defer srv.Close()

	ctx := browsertest.New(t, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Text("#x"))
	if err != nil {
		t.Fatal(err)
	}
	if got != "42" {
		t.Fatalf("script ran to %q, want 42", got)
	}
}
