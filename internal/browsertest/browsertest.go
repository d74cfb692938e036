// Package browsertest starts a headless Chromium for tests that must see
// what a person's browser sees: the console's views, and cross-origin
// requests a foreign web page would make against a local comb.
//
// A test that needs a browser calls New. Where no Chromium is installed the
// test is skipped on a developer machine and fails under CI (CI=true), so a
// browser test can never pass by not running where it matters.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// candidates are the names Debian and other distributions install Chromium
// under, tried in order.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// ExecPath returns the browser binary to use: $COMB_CHROMIUM when set,
// else the first candidate on PATH, else "".
func ExecPath() string {
	if p := os.Getenv("COMB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless browser for t and returns a context that drives
// one tab in it (chromedp.Do and chromedp.Run take it; docs/API.md of the
// chromedp module describes its generic actions); the browser is closed when t ends. Every action run with
// the context is bounded by timeout so a page that never settles fails the
// test instead of hanging it.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	path := ExecPath()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on PATH; CI must install it (apt-get install chromium)")
		}
		t.Skip("no Chromium on PATH (apt-get install chromium); browser tests are skipped here and run in CI")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root, where Chromium refuses its sandbox
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	// Start the browser now, so a browser that cannot start fails here with
	// its own error rather than inside the first action of the test.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}
