package console_test

import (
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
