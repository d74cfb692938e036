package httpd_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/browsertest"
	"github.com/comb-broker/comb/internal/combtest"
)

// attack is what a web page's script can try against a local comb at base:
// read a queue's messages, delete the queue, and push to another queue
// through a "no-cors" POST, which a browser sends without asking even though the page may not
// read the answer. Each outcome is the status the page saw or the error it
// got.
const attack = `(async (base) => {
	const out = {};
	const attempt = async (name, f) => {
		try { const r = await f(); out[name] = r.type === "opaque" ? "opaque" : r.status + " " + await r.text(); }
		catch (e) { out[name] = "error " + e.name; }
	};
	await attempt("read", () => fetch(base + "/api/v1/messages?queue=vault"));
	await attempt("delete", () => fetch(base + "/api/v1/resources/queues/vault", {method: "DELETE"}));
	await attempt("push", () => fetch(base + "/api/v1/push", {method: "POST", mode: "no-cors",
		headers: {"Content-Type": "text/plain"}, body: JSON.stringify({items: [{queue: "dropbox", payload: {from: "page"}}]})}));
	return out;
})(%q)`

// pageServer serves an empty HTML page, which gives a browser tab its origin.
func pageServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>page</title>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runAttack loads pageURL in the browser and runs the attack on comb.
func runAttack(t *testing.T, ctx context.Context, pageURL, comb string) map[string]string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("navigate %s: %v", pageURL, err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](fmt.Sprintf(attack, comb), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("run the page's script: %v", err)
	}
	return out
}

// TestABrowserPageOfAnotherOriginCannotReadOrDeleteQueues runs a real
// browser against comb without auth: a page on another port of 127.0.0.1
// fails to read, delete and push, and the queue is untouched; the same page
// on an origin the operator listed, and a page comb serves itself, succeed.
func TestABrowserPageOfAnotherOriginCannotReadOrDeleteQueues(t *testing.T) {
	ctx := browsertest.New(t, 60*time.Second)
	foreign, trusted := pageServer(t), pageServer(t)

	b := combtest.MustOpenBroker(t, combtest.Options{})
	api := httpd.NewHandler(b, httpd.Config{CORSOrigins: []string{trusted.URL}})
	// comb's own pages (the console) share its origin; this one stands in.
	own := http.NewServeMux()
	own.HandleFunc("GET /own-page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>own</title>`)
	})
	own.Handle("/", api)
	combSrv := httptest.NewServer(own)
	t.Cleanup(func() { b.Drain(); combSrv.Close() })
	srv := &combtest.Server{Client: &combtest.Client{TB: t, URL: combSrv.URL, HTTP: combSrv.Client()}, Broker: b, HTTP: combSrv}
	stored := func(queue string) int {
		var got struct{ Messages []any }
		srv.Do("GET", "/api/v1/messages?queue="+queue, nil).JSON(t, &got)
		return len(got.Messages)
	}

	exists := mustQueue(t, srv, "vault")
	out := runAttack(t, ctx, foreign.URL, combSrv.URL)
	for _, what := range []string{"read", "delete"} {
		if !strings.HasPrefix(out[what], "error TypeError") {
			t.Errorf("a foreign page's %s: %q, want a failed fetch", what, out[what])
		}
	}
	exists("after a foreign page tried to delete it")
	if n := stored("vault"); n != 1 {
		t.Errorf("queue vault holds %d messages after a foreign page's visit, want the 1 pushed before", n)
	}
	if n := stored("dropbox"); n != 0 {
		t.Errorf("a foreign page's no-cors push stored %d messages", n)
	}

	// The listed origin reads the message and deletes the queue.
	out = runAttack(t, ctx, trusted.URL, combSrv.URL)
	if !strings.HasPrefix(out["read"], "200 ") || !strings.Contains(out["read"], `"queue":"vault"`) {
		t.Errorf("the listed origin's read: %q", out["read"])
	}
	if !strings.HasPrefix(out["delete"], "200 ") {
		t.Errorf("the listed origin's delete: %q", out["delete"])
	}
	if r := srv.Do("GET", "/api/v1/resources/queues/vault", nil); r.Status != http.StatusNotFound {
		t.Errorf("queue after the listed origin deleted it: %d %s", r.Status, r.Body)
	}
	if n := stored("dropbox"); n != 1 {
		t.Errorf("the listed origin's no-cors push stored %d messages, want 1", n)
	}

	// comb's own page: its fetches carry Origin too (DELETE and POST do),
	// and are served.
	mustQueue(t, srv, "vault")
	out = runAttack(t, ctx, combSrv.URL+"/own-page", "")
	if !strings.HasPrefix(out["read"], "200 ") || !strings.HasPrefix(out["delete"], "200 ") {
		t.Errorf("comb's own page: %v", out)
	}
}
