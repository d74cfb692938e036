package console_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/internal/combtest"
)

// visible reports whether sel exists and takes up space on the page.
func (p *page) visible(sel string) bool {
	p.t.Helper()
	return eval[bool](p, `(() => { const e = document.querySelector(`+jsString(sel)+`); return !!e && e.getClientRects().length > 0; })()`)
}

// await evaluates js, waiting for the promise it returns.
func await[T any](p *page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// TestConsoleSignOutForgetsWhoWasSignedIn: before anyone signs in there is
// nothing to sign out of, and after signing out the header no longer names
// the previous identity above the sign-in form.
func TestConsoleSignOutForgetsWhoWasSignedIn(t *testing.T) {
	f := newFixture(t)
	p := newPage(t, f.srv.URL)

	p.do("open console", chromedp.Navigate(f.srv.URL+"/"))
	p.wait("#token")
	if p.visible("#signout") {
		t.Fatal(`"sign out" is offered before anyone signed in`)
	}
	p.fill("#token", f.reader)
	p.click("#token-save")
	p.wait("#ov-cards .stat")
	if got := p.text("#who"); !strings.Contains(got, "viewer") || !strings.Contains(got, "read-only") {
		t.Fatalf("who after sign-in = %q", got)
	}
	if !p.visible("#signout") {
		t.Fatal(`no "sign out" once signed in`)
	}
	p.click("#signout")
	p.wait("#token")
	if got := eval[string](p, `document.querySelector("#who").textContent`); got != "" {
		t.Fatalf("header still shows %q after sign out", got)
	}
	if p.visible("#signout") {
		t.Fatal(`"sign out" still offered after signing out`)
	}
	if got := eval[string](p, `document.body.dataset.level || ""`); got != "" {
		t.Fatalf("page still carries level %q after sign out", got)
	}
	// Signing in again as someone else shows only the new identity.
	p.fill("#token", f.admin)
	p.click("#token-save")
	p.wait("#ov-cards .stat")
	if got := p.text("#who"); !strings.Contains(got, "ops") || strings.Contains(got, "viewer") {
		t.Fatalf("who after a second sign-in = %q", got)
	}
}

// TestConsoleHasAFaviconOfItsOwn: the page names an icon that its own
// origin serves (so no 404 is logged on each load and CSP stays 'self'),
// and /favicon.ico, which some clients ask for anyway, answers too.
func TestConsoleHasAFaviconOfItsOwn(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/"))
	p.wait("#ov-cards .stat")
	href := eval[string](p, `(document.querySelector('link[rel="icon"]') || {}).href || ""`)
	if !strings.HasPrefix(href, srv.URL+"/") {
		t.Fatalf("icon link = %q, want one on the page's own origin", href)
	}
	status := await[int](p, `fetch(document.querySelector('link[rel="icon"]').href).then(r => r.status)`)
	if status != http.StatusOK {
		t.Fatalf("the page's icon answers %d", status)
	}
	for _, path := range []string{strings.TrimPrefix(href, srv.URL), "/favicon.ico"} {
		resp, err := srv.HTTP.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(body), "<svg") {
			t.Fatalf("GET %s: %d %q %.60s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("GET %s has no CSP", path)
		}
	}
}

// TestConsoleAssetsAreServedGzippedWhenAccepted: a browser that accepts
// gzip gets the precompressed body (smaller, the same bytes once inflated)
// under its own ETag; one that does not, or refuses it with q=0, gets the
// file as written; both answers say they vary by Accept-Encoding.
func TestConsoleAssetsAreServedGzippedWhenAccepted(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	// A transport that leaves Accept-Encoding and the body alone.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(path, accept, inm string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	var rawTotal, gzTotal int
	for _, path := range []string{"/", "/ui/app.js", "/ui/style.css", "/ui/seek.js", "/ui/dlq.js"} {
		plain, raw := get(path, "", "")
		if plain.StatusCode != http.StatusOK || plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("GET %s without gzip: %d %v", path, plain.StatusCode, plain.Header)
		}
		for _, accept := range []string{"gzip, deflate, br, zstd", "br;q=1.0, gzip;q=0.5", "*"} {
			resp, body := get(path, accept, "")
			if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("GET %s (Accept-Encoding %q): %v", path, accept, resp.Header)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("GET %s: not gzip: %v", path, err)
			}
			inflated, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(inflated, raw) {
				t.Fatalf("GET %s: the gzipped body does not inflate to the file (%v)", path, err)
			}
			if len(body) >= len(raw) || resp.Header.Get("ETag") == plain.Header.Get("ETag") || resp.Header.Get("Content-Security-Policy") == "" {
				t.Fatalf("GET %s: %d gzipped bytes for %d, ETag %q beside %q", path, len(body), len(raw), resp.Header.Get("ETag"), plain.Header.Get("ETag"))
			}
			if again, _ := get(path, accept, resp.Header.Get("ETag")); again.StatusCode != http.StatusNotModified {
				t.Fatalf("GET %s gzipped with its ETag: %d, want 304", path, again.StatusCode)
			}
			if accept == "*" {
				rawTotal += len(raw)
				gzTotal += len(body)
			}
		}
		for _, accept := range []string{"gzip;q=0", "identity", "br", "gzip;q=0, *"} {
			if resp, _ := get(path, accept, ""); resp.Header.Get("Content-Encoding") != "" {
				t.Fatalf("GET %s (Accept-Encoding %q) came %q", path, accept, resp.Header.Get("Content-Encoding"))
			}
		}
	}
	t.Logf("these files: %d bytes, %d gzipped", rawTotal, gzTotal)
}
