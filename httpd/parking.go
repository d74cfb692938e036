package httpd

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Parked long-polls leave net/http while they wait. A request net/http
// serves keeps, for as long as its handler runs, a goroutine reading
// ahead for the peer's hang-up besides the handler's own, and answers
// through buffers of its own that a reply after a long wait is the first
// to write: at 10,000 parked pops, net/http alone took 620-760 ms and a
// CPU second to answer them all, with nothing else to do
// (bench/results/parked-floor-2026-12-02.md). So a pop that is about to
// wait takes its connection from net/http (Hijack), its hang-up is
// watched with every other parked connection's from one epoll set
// (closewatch_linux.go), its answer goes out in one write, and the
// connection goes back to net/http, through the listener it came from,
// for its next request. Where no such watch exists (not Linux), pops wait
// inside net/http as before.

// parking is a Server's parked connections: the watch of their hang-ups,
// the listeners they go back to, and those not yet answered, which
// Shutdown waits for as net/http waits for the requests it still holds.
type parking struct {
	idleFor time.Duration // the server's IdleTimeout, for idleConns
	stall   time.Duration // Config.WriteStall, for answers (writestall.go)

	mu        sync.Mutex
	watch     *closeWatch
	serving   int                      // Serve calls running, which share watch
	answered  *sync.Cond               // signalled as held empties
	held      map[*parkedConn]struct{} // taken and not yet answered
	idleConns map[*idleConn]struct{}   // answered, waiting for a request
	closing   atomic.Bool              // shutting down: answer, then close
}

func newParking(idle, stall time.Duration) *parking {
	p := &parking{idleFor: idle, stall: stall, held: map[*parkedConn]struct{}{},
		idleConns: map[*idleConn]struct{}{}}
	p.answered = sync.NewCond(&p.mu)
	return p
}

// listen wraps ln so that the connections taken from its requests can be
// handed back to it, and starts the watch with the first listener. The
// returned function undoes both once the listener is served no more.
func (p *parking) listen(ln net.Listener) (net.Listener, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watch == nil {
		w, err := newCloseWatch()
		if err != nil {
			return ln, func() {} // pops wait inside net/http, as without a watch
		}
		p.watch = w
	}
	p.serving++
	hb := newHandback(ln)
	return hb, func() {
		hb.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.serving--
		if p.serving == 0 {
			// Connections still held are no longer watched: their pops
			// end at the broker's drain or their timeout.
			w := p.watch
			p.watch = nil
			p.mu.Unlock()
			w.stop()
			p.mu.Lock()
		}
	}
}

// listenerKey holds, in a request's context, the listener its connection
// was accepted from.
type listenerKey struct{}

// listenerContext is an http.Server's BaseContext: net/http calls it with
// the listener each Serve call serves.
func listenerContext(l net.Listener) context.Context {
	return context.WithValue(context.Background(), listenerKey{}, l)
}

// take hijacks r's connection for a pop about to wait, and has gone
// called if its peer hangs up meanwhile. It returns nil, and leaves the
// request to net/http, where the connection cannot go back to net/http
// afterwards or its hang-up cannot be watched.
func (p *parking) take(w http.ResponseWriter, r *http.Request, gone func()) *parkedConn {
	if !r.ProtoAtLeast(1, 1) || r.TLS != nil || r.Close || p.closing.Load() {
		return nil
	}
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		// A body the pop does not read: net/http reads past it before the
		// next request, where here it would be taken for that request.
		return nil
	}
	// The listener it came through, where it goes back (Server sets it as
	// the base of every request's context: listenerContext).
	hb, _ := r.Context().Value(listenerKey{}).(*handback)
	p.mu.Lock()
	watch := p.watch
	p.mu.Unlock()
	if hb == nil || watch == nil {
		return nil
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil // HTTP/2, or a writer that cannot: net/http keeps it
	}
	pc := &parkedConn{p: p, back: hb, header: w.Header(), fd: -1}
	pc.rec, _ = w.(*statusRecorder)
	var unread []byte
	if rc, ok := conn.(*resumedConn); ok {
		// Handed back with bytes of later requests, and not all of them
		// read yet: they follow what net/http has read.
		conn, unread = rc.Conn, rc.pending
	}
	pc.conn = conn
	// The last write net/http made set a deadline (writestall.go) that
	// would fail the answer's write if it came later.
	conn.SetWriteDeadline(time.Time{})
	if n := brw.Reader.Buffered(); n > 0 {
		// A request the client sent ahead: it is the connection's next.
		b, _ := brw.Reader.Peek(n)
		pc.pending = append(pc.pending, b...)
	}
	pc.pending = append(pc.pending, unread...)
	// net/http keeps the connection's buffers (8 KiB) until the handler
	// returns, that is for the whole wait, though it uses them no more
	// once the connection is hijacked, and a request with no body has no
	// reader of them left. What they held is copied above: emptied, they
	// halve what a parked pop keeps on the heap.
	*brw.Reader = bufio.Reader{}
	*brw.Writer = bufio.Writer{}
	// Watched for bytes too, so that once answered it waits for its next
	// request under the same watch (idle). Bytes alone while it waits are
	// a request sent ahead of the answer: the watch ends with them (one
	// shot), and they are read after the answer, by net/http.
	if fd, err := watch.add(conn, func(ev watchEvent) {
		if ev&hungUp != 0 {
			pc.left.Store(true)
			gone()
		}
	}); err == nil {
		pc.fd = fd
		pc.watch = watch
	}
	p.mu.Lock()
	p.held[pc] = struct{}{}
	p.mu.Unlock()
	return pc
}

// shutdown makes every later answer close its connection, and waits until
// every connection taken has been answered, or ctx ends; then it ends the
// writes of those still held, and closes those waiting for a request.
func (p *parking) shutdown(ctx context.Context) error {
	p.closing.Store(true)
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.answered.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	for len(p.held) > 0 && ctx.Err() == nil {
		p.answered.Wait()
	}
	var err error
	if len(p.held) > 0 {
		err = ctx.Err()
		for pc := range p.held {
			// Its write fails at once; its handler closes it, after
			// the watch of its descriptor ends.
			pc.conn.SetDeadline(time.Unix(1, 0))
		}
	}
	// Answered before the shutdown began and waiting for a request, as
	// net/http closes its idle connections.
	idle := make([]*idleConn, 0, len(p.idleConns))
	for ic := range p.idleConns {
		idle = append(idle, ic)
	}
	p.mu.Unlock()
	for _, ic := range idle {
		ic.end(false)
	}
	return err
}

// parkedConn answers one taken request on its bare connection: a
// ResponseWriter for the pop handler's answer, sent with one write.
type parkedConn struct {
	p       *parking
	back    *handback
	conn    net.Conn
	pending []byte // bytes of the next request, already read
	watch   *closeWatch
	fd      int32
	rec     *statusRecorder // the request's status, for the metrics
	left    atomic.Bool     // its peer hung up: nothing more is sent

	header  http.Header
	status  int
	sent    bool   // the head is out
	body    []byte // a body written without a Content-Length, sent at finish
	length  int64  // the Content-Length sent, -1 for none
	written int64
	err     error // the first write error: the connection is closed
}

func (pc *parkedConn) Header() http.Header { return pc.header }

func (pc *parkedConn) WriteHeader(code int) {
	if pc.status == 0 && !pc.sent {
		pc.status = code
	}
}

// Write sends the head and b in one write when the header holds the
// body's length, as every pop answer does (a large one written in parts:
// writeReply); anything else is kept and sent at finish, so b is never
// held after Write returns.
func (pc *parkedConn) Write(b []byte) (int, error) {
	if pc.err != nil {
		return 0, pc.err
	}
	if pc.status == 0 {
		pc.status = http.StatusOK
	}
	if !pc.sent && pc.body == nil {
		if cl, err := strconv.ParseInt(pc.header.Get("Content-Length"), 10, 64); err == nil && cl >= int64(len(b)) {
			return pc.send(b, cl)
		}
	}
	if pc.sent {
		if pc.written+int64(len(b)) > pc.length {
			return 0, http.ErrContentLength
		}
		return pc.send(b, pc.length)
	}
	pc.body = append(pc.body, b...)
	return len(b), nil
}

// SetWriteDeadline cuts a write under way (roomWrites.squeeze); the next
// write sets its own.
func (pc *parkedConn) SetWriteDeadline(t time.Time) error { return pc.conn.SetWriteDeadline(t) }

// send writes the head of a body of length bytes, if not yet out, and b:
// each writeStallChunk of it within the server's write stall, as
// net/http's writes are (writestall.go). Not when closing: the deadline
// set to end the server's held answers at once stays.
func (pc *parkedConn) send(b []byte, length int64) (int, error) {
	bufs := net.Buffers{}
	if !pc.sent {
		bufs = append(bufs, pc.head(length))
		pc.sent = true
	}
	stall := pc.p.stall > 0 && !pc.p.closing.Load()
	rest := b
	for first := true; first || len(rest) > 0; first = false {
		n := len(rest)
		if stall {
			n = min(n, writeStallChunk)
			pc.conn.SetWriteDeadline(time.Now().Add(pc.p.stall))
		}
		if n > 0 {
			bufs = append(bufs, rest[:n])
		}
		rest = rest[n:]
		if _, err := bufs.WriteTo(pc.conn); err != nil {
			pc.err = err
			return 0, err
		}
		bufs = bufs[:0]
	}
	pc.written += int64(len(b))
	return len(b), nil
}

// keepAlive reports whether the connection goes back to net/http.
func (pc *parkedConn) keepAlive() bool {
	return pc.err == nil && !pc.p.closing.Load() && pc.back != nil
}

// head is the status line and header of an answer with a body of length
// bytes (the header's own Content-Length, if any, is replaced by it).
func (pc *parkedConn) head(length int64) []byte {
	status := pc.status
	bodyless := status == http.StatusNoContent || status == http.StatusNotModified || status < 200
	h := make([]byte, 0, 256)
	h = append(h, "HTTP/1.1 "...)
	h = strconv.AppendInt(h, int64(status), 10)
	h = append(h, ' ')
	h = append(h, http.StatusText(status)...)
	h = append(h, "\r\nDate: "...)
	h = time.Now().UTC().AppendFormat(h, http.TimeFormat)
	h = append(h, "\r\n"...)
	for k, vs := range pc.header {
		switch k {
		case "Content-Length", "Connection", "Transfer-Encoding", "Date":
			continue
		}
		for _, v := range vs {
			h = append(h, k...)
			h = append(h, ": "...)
			h = append(h, headerValue(v)...)
			h = append(h, "\r\n"...)
		}
	}
	pc.length = -1
	if !bodyless {
		pc.length = length
		h = append(h, "Content-Length: "...)
		h = strconv.AppendInt(h, length, 10)
		h = append(h, "\r\n"...)
	}
	if !pc.keepAlive() {
		h = append(h, "Connection: close\r\n"...)
	}
	return append(h, "\r\n"...)
}

// headerValue is v safe to send in a header line.
func headerValue(v string) string {
	if strings.ContainsAny(v, "\r\n") {
		return strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
	}
	return v
}

// finish sends what is not out yet and stops watching for a hang-up;
// then the connection waits, still outside net/http, for its next
// request (idle), or is closed.
func (pc *parkedConn) finish() {
	if pc.left.Load() && !pc.sent {
		pc.err = net.ErrClosed // nobody to answer
	}
	if !pc.sent && pc.err == nil {
		if pc.status == 0 {
			pc.status = http.StatusOK
		}
		pc.send(pc.body, int64(len(pc.body)))
	}
	if pc.rec != nil && pc.rec.status == 0 {
		pc.rec.status = pc.status
	}
	// Short of the length it announced (a handler that failed half way),
	// the stream is out of step: the connection cannot carry another.
	if !pc.keepAlive() || pc.length >= 0 && pc.written != pc.length || !pc.p.idle(pc) {
		if pc.watch != nil {
			pc.watch.remove(pc.fd)
		}
		pc.conn.Close()
	}
	pc.p.mu.Lock()
	delete(pc.p.held, pc)
	if len(pc.p.held) == 0 {
		pc.p.answered.Broadcast()
	}
	pc.p.mu.Unlock()
}

// idleConn is an answered connection waiting, outside net/http, for the
// first bytes of its next request: net/http would keep a goroutine and a
// read buffer for it meanwhile, and taking it back costs the same as
// accepting it, so it goes back only when there is something to read,
// after the replies of the same wake are out.
type idleConn struct {
	p     *parking
	back  *handback
	conn  net.Conn
	fd    int32
	watch *closeWatch

	mu    sync.Mutex
	timer *time.Timer // the idle timeout, once watched
	done  bool        // handed back or closed, or being
}

// idle has pc's connection wait for its next request; false when it
// cannot (the caller stops its watch and closes it then).
func (p *parking) idle(pc *parkedConn) bool {
	if err := pc.conn.SetDeadline(time.Time{}); err != nil {
		return false
	}
	if len(pc.pending) > 0 || pc.watch == nil {
		// Its next request is already here, or nothing could watch for it.
		if pc.watch != nil {
			pc.watch.remove(pc.fd)
			pc.watch = nil
		}
		if len(pc.pending) > 0 {
			return pc.back.giveBack(&resumedConn{Conn: pc.conn, pending: pc.pending})
		}
		return pc.back.giveBack(pc.conn)
	}
	ic := &idleConn{p: p, back: pc.back, conn: pc.conn, watch: pc.watch, fd: pc.fd}
	// Held until it is watched, so that nothing (a report, the timer, a
	// shutdown) ends it half set up.
	ic.mu.Lock()
	p.mu.Lock()
	p.idleConns[ic] = struct{}{}
	p.mu.Unlock()
	// The watch of its wait goes on as the watch of its next request.
	ok := pc.watch.swap(pc.fd, func(ev watchEvent) { ic.end(ev&readable != 0) })
	if ok {
		// As net/http's IdleTimeout: a connection that sends nothing for
		// so long is closed.
		ic.timer = time.AfterFunc(p.idleFor, func() { ic.end(false) })
	} else {
		ic.done = true
	}
	ic.mu.Unlock()
	if ok {
		return true
	}
	p.forget(ic)
	// The watch reported while the pop waited: a hang-up, or a request
	// sent ahead, which net/http reads now.
	if pc.left.Load() {
		return false
	}
	pc.watch.remove(pc.fd)
	pc.watch = nil
	return pc.back.giveBack(pc.conn)
}

// end hands ic back to net/http (resume) or closes it, once. Its watch
// ends first: the descriptor's number may be another connection's once
// it is closed.
func (ic *idleConn) end(resume bool) {
	ic.mu.Lock()
	if ic.done {
		ic.mu.Unlock()
		return
	}
	ic.done = true
	ic.timer.Stop()
	ic.mu.Unlock()
	ic.watch.remove(ic.fd)
	ic.p.forget(ic)
	if !resume || !ic.back.giveBack(ic.conn) {
		ic.conn.Close()
	}
}

func (p *parking) forget(ic *idleConn) {
	p.mu.Lock()
	delete(p.idleConns, ic)
	p.mu.Unlock()
}

// handback is a listener that also accepts the connections given back
// to it. A hand-back never blocks: the watch's one goroutine makes them.
type handback struct {
	net.Listener
	accepted chan acceptResult
	more     chan struct{} // signalled when back grows
	closed   chan struct{}
	pumped   chan struct{} // closed when pump has returned
	once     sync.Once

	mu       sync.Mutex
	back     []net.Conn
	isClosed bool
}

type acceptResult struct {
	c   net.Conn
	err error
}

func newHandback(ln net.Listener) *handback {
	l := &handback{Listener: ln, accepted: make(chan acceptResult), more: make(chan struct{}, 1),
		closed: make(chan struct{}), pumped: make(chan struct{})}
	go l.pump()
	return l
}

// pump accepts from the listener until it is closed.
func (l *handback) pump() {
	defer close(l.pumped)
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- acceptResult{c, err}:
		case <-l.closed:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (l *handback) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		if len(l.back) > 0 {
			c := l.back[0]
			l.back[0] = nil
			l.back = l.back[1:]
			l.mu.Unlock()
			return c, nil
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case a := <-l.accepted:
			return a.c, a.err
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
}

// giveBack queues c for Accept; false once the listener is closed.
func (l *handback) giveBack(c net.Conn) bool {
	l.mu.Lock()
	if l.isClosed {
		l.mu.Unlock()
		return false
	}
	l.back = append(l.back, c)
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return true
}

// Close closes the listener and the connections given back and not yet
// accepted.
func (l *handback) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		l.mu.Lock()
		l.isClosed = true
		back := l.back
		l.back = nil
		l.mu.Unlock()
		for _, c := range back {
			c.Close()
		}
		close(l.closed)
		err = l.Listener.Close()
		<-l.pumped
	})
	return err
}

// resumedConn is a connection handed back to net/http with the bytes of
// its next request already read: they come first.
type resumedConn struct {
	net.Conn
	pending []byte
}

func (c *resumedConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// CloseWrite lets net/http half-close it as it does a TCP connection.
func (c *resumedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
