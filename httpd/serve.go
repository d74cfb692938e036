package httpd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/comb-broker/comb/broker"
)

// ErrInsecureBind is returned by Listen for an address other than a
// loopback one when the server has no Auth and AllowInsecureBind is off.
var ErrInsecureBind = errors.New("refusing to serve a non-loopback address without auth")

// DefaultShutdownTimeout bounds how long Serve lets requests in flight
// finish once its context ends.
const DefaultShutdownTimeout = 30 * time.Second

// Listen binds addr (host:port, port 0 for any free one) for a server
// configured by cfg. Without cfg.Auth it refuses any address but a loopback
// one, since that would open every queue and admin route to the network,
// unless cfg.AllowInsecureBind is set, and then it logs a warning. An IP
// literal is refused before anything is bound; a host name once bound.
func Listen(addr string, cfg Config) (net.Listener, error) {
	if pre := literalAddr(addr); pre != nil {
		if err := checkBind(pre, cfg.Auth, cfg.AllowInsecureBind, nil); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := checkBind(ln.Addr(), cfg.Auth, cfg.AllowInsecureBind, cfg.Logger); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// checkBind is Listen's decision for one address; log, when set, gets the
// warning for an insecure bind that was allowed.
func checkBind(addr net.Addr, auth *Authenticator, allow bool, log *slog.Logger) error {
	if auth != nil || isLoopback(addr) {
		return nil
	}
	if !allow {
		return fmt.Errorf("%w: %s", ErrInsecureBind, addr)
	}
	if log != nil {
		log.Warn("serving a non-loopback address without auth: anyone who can reach it may read, write and delete every queue",
			"addr", addr.String())
	}
	return nil
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// literalAddr is the address a listen address names without a lookup: an
// IP literal, or the unspecified address for an empty host. Nil for a host
// name, which is only known once bound.
func literalAddr(addr string) net.Addr {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if host == "" {
		return &net.TCPAddr{IP: net.IPv6unspecified}
	}
	if ip := net.ParseIP(host); ip != nil {
		return &net.TCPAddr{IP: ip}
	}
	return nil
}

// Server serves a broker's routes and console over HTTP with the
// timeouts and the shutdown order of `comb serve`, so a program that embeds
// the broker serves the same API the same way:
//
//	ln, err := httpd.Listen("127.0.0.1:6632", cfg)
//	...
//	err = httpd.NewServer(b, cfg).Serve(ctx, ln) // until ctx ends
//	b.Close()
type Server struct {
	b   *broker.Broker
	h   *Handler
	log *slog.Logger
	srv *http.Server
}

// MaxHeaderBytes bounds a request's line and headers on a Server: past
// it (and the 4 KiB net/http reads beyond), net/http answers 431 and
// closes the connection.
const MaxHeaderBytes = 64 << 10

// NewServer returns a server of b's routes, configured by cfg.
func NewServer(b *broker.Broker, cfg Config) *Server {
	h := NewHandler(b, cfg)
	const idle = 120 * time.Second
	h.parking = newParking(idle, h.cfg.WriteStall)
	h.conns = newConnCount(maxConns(cfg.MaxConns), h.cfg.WriteStall, h.log)
	return &Server{b: b, h: h, log: h.log, srv: &http.Server{
		Handler: h,
		// Headers must arrive promptly; a body may take minutes, as pushes
		// of up to 64 MiB cross slow edge links. The read deadline is
		// lifted once the body is read, so it never cuts a long-poll.
		ReadHeaderTimeout: 10 * time.Second,
		// net/http's default of 1 MB let 200 connections, each holding an
		// unfinished header line of a megabyte, take the server to 362 MB
		// until their header timeout; Queen's clients send a few hundred
		// bytes, a bearer token a few KB.
		MaxHeaderBytes: MaxHeaderBytes,
		ReadTimeout:    5 * time.Minute,
		// No write deadline, on purpose: a pop long-polls for as long as the
		// client's timeout parameter asks (30 s by default, unbounded), and a
		// server-wide deadline would cut those replies off. The pop handler
		// answers by its own deadline instead.
		WriteTimeout: 0,
		IdleTimeout:  idle,
		BaseContext:  listenerContext,
		ErrorLog:     slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}}
}

// Handler is the server's routes, to mount elsewhere or list with Routes.
func (s *Server) Handler() *Handler { return s.h }

// Serve answers requests on ln until ctx ends, Shutdown is called or ln
// fails, then shuts down as Shutdown does, giving requests in flight up to
// DefaultShutdownTimeout, and returns. It returns nil after a shutdown and
// the listener's error otherwise; a shutdown cut short is logged. Serve
// leaves the broker open: close it once Serve has returned, so every write
// a request handed it is committed before the file closes.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ln, unlisten := s.h.parking.listen(s.h.conns.limit(ln))
	defer unlisten()
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(ln) }()
	var err error
	stopped := false
	select {
	case err = <-served:
		stopped = true
	case <-ctx.Done():
		s.log.Info("shutting down")
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownTimeout)
	defer cancel()
	if serr := s.Shutdown(shutdownCtx); serr != nil {
		s.log.Warn("shutdown", "err", serr)
	}
	if !stopped {
		err = <-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Shutdown stops the server without losing an answer: parked long-polls
// answer at once (the broker drains, and stays drained: later pops do not
// wait either), the listener closes, and requests in flight finish until
// ctx ends. It may be called while Serve runs, which then returns once the
// requests in flight have finished, and more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.h.parking.closing.Store(true)
	s.b.Drain()
	err := s.srv.Shutdown(ctx)
	// Pops taken out of net/http (parking.go) are not among the requests
	// it waits for.
	return errors.Join(err, s.h.parking.shutdown(ctx))
}
