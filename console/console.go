// Package console serves comb's web console: a handful of hand-written
// files (HTML, ES modules, CSS) embedded in the binary, so an operator can
// open the broker in a browser with nothing else installed and no network
// beyond the broker itself. The console speaks only the public JSON API, so
// access levels and tenants apply to it exactly as to any client.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// CSP allows nothing but this origin: no inline script or style, no
// framing, no plugins. Charts are SVG built through the DOM, so they need
// no exception either.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// Prefix is where the console's files live; "/" serves its page too.
const Prefix = "/ui/"

type file struct {
	body  []byte
	ctype string
	etag  string
	gz    []byte // body gzipped at start, or nil when that saves nothing
	gzTag string // the gzipped body's own ETag: another representation
}

// Handler serves the console.
type Handler struct {
	files map[string]file // keyed by path under assets, e.g. "app.js"
}

// New reads the embedded files once and returns their handler.
func New() *Handler {
	h := &Handler{files: map[string]file{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		f := file{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		if gz := gzipped(body); len(gz) < len(body) {
			f.gz, f.gzTag = gz, `"`+hex.EncodeToString(sum[:8])+`-gz"`
		}
		h.files[strings.TrimPrefix(p, "assets/")] = f
		return nil
	})
	if err != nil {
		// The files are compiled in; failing to read them is a broken build.
		panic(fmt.Sprintf("console: read embedded assets: %v", err))
	}
	return h
}

// Owns reports whether the console answers path: "/", "/ui", everything
// under "/ui/", and "/favicon.ico", which browsers and tools ask for on
// their own.
func Owns(p string) bool {
	return p == "/" || p == "/ui" || p == "/favicon.ico" || strings.HasPrefix(p, Prefix)
}

// ServeHTTP answers GET and HEAD for the console's page and files; anything
// else is a 404 or 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		jsonError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/ui")
	name = strings.TrimPrefix(name, "/")
	switch name {
	case "":
		name = "index.html"
	case "favicon.ico":
		name = "favicon.svg"
	}
	f, ok := h.files[name]
	if !ok {
		jsonError(w, http.StatusNotFound, "Not found")
		return
	}
	hd.Set("Content-Type", f.ctype)
	// Revalidate every time: the files change with the binary, and a 304
	// on a matching ETag keeps the revalidation cheap.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Vary", "Accept-Encoding")
	body, etag := f.body, f.etag
	if f.gz != nil && acceptsGzip(r.Header.Values("Accept-Encoding")) {
		body, etag = f.gz, f.gzTag
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("ETag", etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}

// jsonError answers status with {"error": msg}, as every route of the
// API answers what it refuses (docs/wire.md, Errors).
func jsonError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"error\":%q}\n", msg)
}

// gzipped compresses b once, at start, so no request pays for it.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil
	}
	if _, err := zw.Write(b); err != nil {
		return nil
	}
	if err := zw.Close(); err != nil {
		return nil
	}
	return buf.Bytes()
}

// acceptsGzip reads Accept-Encoding (RFC 9110, 12.5.3): gzip (or x-gzip)
// with a q-value above zero, or else "*" with one; a gzip named with q=0
// refuses it whatever "*" says.
func acceptsGzip(values []string) bool {
	q := map[string]float64{}
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			weight := 1.0
			if k, val, ok := strings.Cut(params, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					weight = f
				}
			}
			q[coding] = weight
		}
	}
	for _, c := range []string{"gzip", "x-gzip", "*"} {
		if w, ok := q[c]; ok {
			return w > 0
		}
	}
	return false
}
