// Package httpd serves the broker over Queen's HTTP routes. It holds no
// business logic: it decodes requests, calls the broker, and encodes answers.
package httpd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/console"
)

// DefaultMaxBodyBytes bounds a request body. Clients push payloads of a few
// MB and ack 1000 items per call; 64 MiB leaves room for both.
const DefaultMaxBodyBytes = 64 << 20

// Config configures the HTTP adapter.
type Config struct {
	// MaxBodyBytes bounds the bodies of the routes that carry messages or
	// stream state; a larger body is a 413, refused unread when its
	// Content-Length says so. The other routes take at most 1 MiB, or
	// MaxBodyBytes where lower (bodylimit.go). Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the body bytes of all requests being read
	// at once; a body that finds no room within BodyWait is a 503
	// with Retry-After. Default DefaultMaxBodyBytesInFlight.
	MaxBodyBytesInFlight int64
	// MinBodyRate (bytes a second) and BodyGrace: once BodyGrace has passed
	// since a body began, it must have averaged MinBodyRate, or its read
	// fails (408) and the connection closes. Defaults DefaultMinBodyRate
	// and DefaultBodyGrace.
	MinBodyRate int64
	BodyGrace   time.Duration
	// WriteStall bounds how long a client may take to accept each
	// writeStallChunk bytes of a reply (about 1 KiB a second at the
	// default, DefaultWriteStall): past it the write fails and the
	// connection closes, so that a client that reads nothing cannot keep
	// a reply, its memory and what it holds for ever. Negative: no bound.
	WriteStall time.Duration
	// ContendedWriteStall bounds, while a pop reply waits for room under
	// MaxReplyBytesInFlight, how long a reply holding that room may go
	// without its client accepting any of it: past it the reply is cut
	// and its room given to the one waiting (replybound.go). Default
	// DefaultContendedWriteStall; negative: only WriteStall bounds it.
	ContendedWriteStall time.Duration
	// BodyWait is how long a body waits for room under
	// MaxBodyBytesInFlight before its 503. Default DefaultBodyWait.
	BodyWait time.Duration
	// MaxReplyBytesInFlight bounds the bytes of the pop replies being
	// encoded and written at once (replies of up to 64 KiB are outside
	// it); a reply that finds no room waits for it (replybound.go).
	// Default DefaultMaxReplyBytesInFlight.
	MaxReplyBytesInFlight int64
	// Version is reported by /health.
	Version string
	// Logger receives server-side errors. Default slog.Default().
	Logger *slog.Logger
	// Auth verifies bearer tokens and supplies each request's tenant and
	// producerSub. Nil disables auth: every route is open, tenant "".
	Auth *Authenticator
	// CORSOrigins lists the web origins (scheme://host[:port]) whose pages
	// may call the server. Without auth, no other origin but the server's
	// own is served and "*" grants nothing; with auth, empty means every
	// origin ("*"). See origin.go and docs/auth.md.
	CORSOrigins []string
	// AllowedHosts lists host names, besides loopback ones, that a request
	// arriving on a loopback address without auth may carry in Host.
	AllowedHosts []string
	// Forwarders serves the /api/v1/forwarders routes. Nil answers them 503.
	Forwarders Forwarders
	// AllowInsecureBind lets Listen bind a non-loopback address without Auth.
	AllowInsecureBind bool
	// TrustUnixPeers lets requests arriving over a Unix domain socket pass
	// without a token, as admin of the default tenant: the socket's file
	// mode (ListenUnix) already limits who can connect.
	TrustUnixPeers bool
	// MaxConns bounds the connections a Server holds at once, on all its
	// listeners; past it a new one is answered 503 and closed
	// (connlimit.go). Default DefaultMaxConns, or less where the process
	// may not open that many files.
	MaxConns int
	// MetricsQueues bounds the queues a Prometheus scrape writes series
	// for, and the consumer-group lags: the first ones by name, and
	// gauges count those left out. A client that creates queues without
	// end made every scrape grow with them (200,000 queues: 71 MB, 3.5 s,
	// the server at 315 MB). Default DefaultMetricsQueues.
	MetricsQueues int
}

// DefaultMetricsQueues is Config.MetricsQueues's default: a scrape of
// about 3.5 MB.
const DefaultMetricsQueues = 10000

// Handler is the HTTP adapter over a broker: an http.Handler of every
// route. Server serves it.
type Handler struct {
	b      *broker.Broker
	cfg    Config
	log    *slog.Logger
	router *httprouter.Router
	// registered is the route table as registered, in order.
	registered []route
	stats      *httpStats    // request counters and metrics registry
	origins    *originPolicy // who may call, checked before routing
	replies    replyBuffers
	bodies     *bodyGate     // room for request bodies being read
	replyRoom  *bodyGate     // room for large pop replies being written (replybound.go)
	roomWrites roomWrites    // the replies being written under replyRoom
	backups    chan struct{} // held by the one backup running (backup.go)
	blocks     bodyBlocks    // blocks of chunked bodies, reused
	// parking takes parked pops out of net/http (parking.go); nil for a
	// handler that no Server serves, whose pops wait inside net/http.
	parking *parking
	// conns counts the connections of the Server serving the handler,
	// for its metrics; nil for a handler that no Server serves.
	conns *connCount
}

// NewHandler returns the handler of every route: the API, the console and
// the metrics, without a listener or timeouts (Server adds those).
func NewHandler(b *broker.Broker, cfg Config) *Handler {
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.Version = cmp.Or(cfg.Version, "dev")
	cfg.MaxBodyBytesInFlight = cmp.Or(cfg.MaxBodyBytesInFlight, DefaultMaxBodyBytesInFlight)
	cfg.MinBodyRate = cmp.Or(cfg.MinBodyRate, DefaultMinBodyRate)
	cfg.BodyGrace = cmp.Or(cfg.BodyGrace, DefaultBodyGrace)
	cfg.WriteStall = cmp.Or(cfg.WriteStall, DefaultWriteStall)
	cfg.ContendedWriteStall = cmp.Or(cfg.ContendedWriteStall, DefaultContendedWriteStall)
	cfg.BodyWait = cmp.Or(cfg.BodyWait, DefaultBodyWait)
	cfg.MetricsQueues = cmp.Or(cfg.MetricsQueues, DefaultMetricsQueues)
	cfg.MaxReplyBytesInFlight = cmp.Or(cfg.MaxReplyBytesInFlight, DefaultMaxReplyBytesInFlight)
	s := &Handler{b: b, cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), router: httprouter.New(), origins: newOriginPolicy(cfg),
		bodies: newBodyGate(cfg.MaxBodyBytesInFlight, cfg.BodyWait), replyRoom: newBodyGate(cfg.MaxReplyBytesInFlight, replyWait),
		backups: make(chan struct{}, 1), roomWrites: roomWrites{stall: cfg.ContendedWriteStall, live: map[*roomWrite]struct{}{}}}
	if cfg.ContendedWriteStall > 0 {
		s.replyRoom.squeeze, s.replyRoom.squeezeEvery = s.roomWrites.squeeze, max(cfg.ContendedWriteStall/2, time.Millisecond)
	}
	s.router.RedirectTrailingSlash = false
	s.router.RedirectFixedPath = false
	s.router.HandleMethodNotAllowed = false
	ui := console.New()
	s.router.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The console owns "/" and "/ui/": whatever no API route matched.
		if console.Owns(r.URL.Path) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				// Answered by the console in plain text; every refusal
				// of comb's routes is JSON.
				w.Header().Set("Allow", "GET, HEAD")
				writeError(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed: "+r.URL.Path+" is the console's, which answers GET and HEAD")
				return
			}
			ui.ServeHTTP(w, r)
			return
		}
		s.fail(w, r, errNoRoute)
	})
	s.router.PanicHandler = func(w http.ResponseWriter, r *http.Request, v any) {
		if v == http.ErrAbortHandler {
			// A handler cutting a reply it has begun (state/get's rows):
			// net/http must close the connection, so the client sees a
			// reply cut short; answering it here appended an error body to
			// the rows and ended the reply as if whole.
			panic(v)
		}
		s.log.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", v)
		s.fail(w, r, fmt.Errorf("panic: %v", v))
	}
	s.stats = newHTTPStats(s)
	for _, rt := range s.routes() {
		s.handle(rt)
	}
	return s
}

// ServeHTTP refuses requests from web pages and hosts the server does not
// trust, for every route alike, sets the CORS headers of the rest and
// answers preflights.
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w, done := s.stats.begin(w)
	defer done()
	if err := s.origins.admit(w, r); err != nil {
		s.fail(w, r, err)
		return
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	release, ok := s.bindBody(w, r)
	if !ok {
		return
	}
	defer release()
	if r.URL.RawPath != "" && s.serveRaw(w, r) {
		return
	}
	s.router.ServeHTTP(w, r)
}

// serveRaw routes on the escaped path and decodes each parameter once, so a
// name holding "/" (the Go SDK path-escapes it to %2F) stays one segment
// instead of turning into a 404. It reports false when no route matches.
func (s *Handler) serveRaw(w http.ResponseWriter, r *http.Request) bool {
	h, ps, _ := s.router.Lookup(r.Method, r.URL.RawPath)
	if h == nil {
		return false
	}
	for i := range ps {
		v, err := url.PathUnescape(ps[i].Value)
		if err != nil {
			return false
		}
		ps[i].Value = v
	}
	defer func() {
		if v := recover(); v != nil {
			s.router.PanicHandler(w, r, v)
		}
	}()
	h(w, r, ps)
	return true
}

// tenant is the tenant a request acts for. Without auth there is one, "".
func tenant(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

type tenantKey struct{}

func (s *Handler) health(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	body := map[string]any{"status": "healthy", "database": "connected", "server": "comb", "worker_id": 0, "version": s.cfg.Version}
	if err := s.b.Health(r.Context()); err != nil {
		body["status"], body["database"] = "unhealthy", "disconnected"
		if errors.Is(err, combtype.ErrReplaced) {
			body["database"] = "replaced"
			body["error"] = "Database file was replaced or removed while the server ran: restart the server to serve the file now at its path"
		}
		if errors.Is(err, combtype.ErrUnwritable) {
			body["database"] = "unwritable"
			body["error"] = "Database file cannot be written: the last commit failed (a read-only file system, an immutable file, its permissions, or a disk error)"
		}
		if errors.Is(err, combtype.ErrDamaged) {
			// Still serving what is intact, so not "disconnected"; 503 so
			// that a health check (comb healthcheck, a container's) shows
			// it: the file stays damaged until it is restored.
			body["database"] = "damaged"
			body["error"] = "Database file is damaged: a request met a damaged page since the server started; " +
				"the server's operator should run comb check and restore from a backup"
		}
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"encode response"}`)
	}
	setJSONHeaders(w, len(b))
	w.WriteHeader(status)
	w.Write(b)
}

// writeError answers {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// readJSON decodes the body, read by readWireBody like every body, into v.
// An empty body is errEmptyBody.
func (s *Handler) readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	raw, end := s.readWireBody(w, r)
	if end != nil {
		return decodeCut(raw, end, v)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return errEmptyBody
	}
	// Unmarshal decodes from the body's own bytes: a json.Decoder over
	// them copied the whole body into a buffer of its own first, and a
	// 63 MB trace took the server to 353 MB.
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %v", errBadBody, err)
	}
	return nil
}

// decodeCut decodes raw, a body cut short by end (past the limit, too
// slow, or a failed read), into v as the hand-written decoders do: the
// error that cut it is answered only when the value needs a byte beyond
// raw, and a value followed by more than whitespace is bad.
func decodeCut(raw []byte, end error, v any) error {
	dec := json.NewDecoder(io.MultiReader(bytes.NewReader(raw), failingReader{end}))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errEmptyBody
		}
		if isBodyBound(err) {
			return err
		}
		return fmt.Errorf("%w: %v", errBadBody, err)
	}
	// Only whitespace may follow the value. dec.More would take a stray
	// '}' or ']' for the end of a stream and let the body through.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if isBodyBound(err) {
			return err
		}
		return fmt.Errorf("%w: trailing data after JSON value", errBadBody)
	}
	return nil
}

// failingReader returns err, or io.EOF when err is nil, on every read.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) {
	if f.err == nil {
		return 0, io.EOF
	}
	return 0, f.err
}

// tb is the broker acting for the request's tenant.
func (s *Handler) tb(r *http.Request) *broker.Broker { return s.b.Tenant(tenant(r.Context())) }
