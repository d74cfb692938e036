package httpd

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The connections a server holds at once are bounded. Every request
// bound (body, headers, rate) caps what one connection can cost, but not
// how many a client opens: a parked long-poll holds about 40 KB
// (docs/limits.md), so a client that parked a hundred thousand of them
// held 4 GB, and one that took every descriptor the process may open
// left none for new clients, nor for the database's own files. Past the
// bound a connection is answered 503, in JSON, and closed, and the
// connections already served go on.

// DefaultMaxConns is Config.MaxConns when it is 0, lowered to what the
// process may open (less fdReserve) where that is less. At about 40 KB a
// parked pop, it bounds what connections hold at about 650 MB; ten
// thousand parked long-polls fit under it.
const DefaultMaxConns = 16384

// fdReserve is the descriptors a default bound leaves to everything else
// the server opens: the database, its WAL and shared memory, backups,
// forwarders' connections upstream, the listeners.
const fdReserve = 128

// maxRefusing bounds the refusals written at once; past it a connection
// is closed unanswered. Each reads the request head and writes its 503
// within refuseWithin, then reads on for refuseLinger.
const (
	maxRefusing  = 64
	refuseWithin = time.Second
	// refuseLinger is how long a refusal reads on after its answer.
	refuseLinger = 250 * time.Millisecond
	// refuseHeadBytes is the most of a request's head a refusal reads
	// before it answers.
	refuseHeadBytes = 4 << 10
	// refuseDrainBytes is the most of a body a refusal reads after its
	// answer, so that the close does not reset the connection under a
	// client still sending a small body, before it reads the answer.
	refuseDrainBytes = 64 << 10
)

// connCount is a server's open connections, on every listener it serves.
type connCount struct {
	max     int64
	log     *slog.Logger
	open    atomic.Int64
	refused atomic.Int64

	refusing chan struct{} // a slot per refusal being written, on any listener
	lastLog  atomic.Int64  // unix nanos of the last refusal logged
	reply    []byte
	// stall is how long a write to a connection may take (writestall.go);
	// 0 is no bound.
	stall time.Duration
}

// maxConns resolves Config.MaxConns: 0 is the default, within the
// process's open-file limit.
func maxConns(configured int) int64 {
	if configured > 0 {
		return int64(configured)
	}
	n := int64(DefaultMaxConns)
	if files, ok := openFileLimit(); ok && files-fdReserve < n {
		n = max(files-fdReserve, 16)
	}
	return n
}

func newConnCount(max int64, stall time.Duration, log *slog.Logger) *connCount {
	body := `{"error":"too many connections: this server holds at most ` + strconv.FormatInt(max, 10) +
		` at once (serve --max-conns); try again later"}`
	reply := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	return &connCount{max: max, log: log, refusing: make(chan struct{}, maxRefusing), reply: []byte(reply), stall: stall}
}

// limit returns ln with its connections counted against c.
func (c *connCount) limit(ln net.Listener) net.Listener { return &limitListener{Listener: ln, c: c} }

// limitListener owns the refusals it begins: Close waits for them.
type limitListener struct {
	net.Listener
	c *connCount

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // refusals being written
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.c.open.Add(1) <= l.c.max {
			return l.c.counted(conn), nil
		}
		l.c.open.Add(-1)
		l.refuse(conn)
	}
}

// Close closes the listener and waits for the refusals it has begun.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true // no refusal begins after: Wait does not race an Add
	l.mu.Unlock()
	l.wg.Wait()
	return err
}

// refuse answers conn 503 and closes it, or closes it at once when
// maxRefusing refusals are being written already or l is closed.
func (l *limitListener) refuse(conn net.Conn) {
	c := l.c
	c.refused.Add(1)
	c.logRefusal()
	select {
	case c.refusing <- struct{}{}:
	default:
		conn.Close()
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-c.refusing
		conn.Close()
		return
	}
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		defer func() { <-c.refusing }()
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(refuseWithin))
		// The answer follows the request's head: an answer before the
		// request, on a connection a client has only just opened, is one
		// it may take for a stray reply on an idle connection.
		if !readHead(conn) {
			return
		}
		if _, err := conn.Write(c.reply); err != nil {
			return
		}
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		conn.SetReadDeadline(time.Now().Add(refuseLinger))
		io.Copy(io.Discard, io.LimitReader(conn, refuseDrainBytes))
	}()
}

// readHead reads conn until a request's head has ended (an empty line),
// refuseHeadBytes have come, or the read fails; false when nothing came.
func readHead(conn net.Conn) bool {
	buf := make([]byte, 0, refuseHeadBytes)
	for len(buf) < cap(buf) {
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return len(buf) > 0 && !errors.Is(err, io.EOF)
		}
	}
	return true
}

// logRefusal logs refusals at most every 10 seconds.
func (c *connCount) logRefusal() {
	now := time.Now().UnixNano()
	last := c.lastLog.Load()
	if now-last < int64(10*time.Second) || !c.lastLog.CompareAndSwap(last, now) {
		return
	}
	c.log.Warn("refusing connections past the bound (serve --max-conns)",
		"open", c.open.Load(), "max", c.max, "refused", c.refused.Load())
}

// counted wraps conn so that closing it gives its place back, and so
// that net/http's replies to requests it cannot parse go out as JSON
// (connerror.go). The wrappers of TCP and Unix connections embed them, so
// that what the parking of pops uses of them, their descriptor
// (syscall.Conn) and net.Buffers' writev, stays theirs.
func (c *connCount) counted(conn net.Conn) net.Conn {
	s := &slot{c: c}
	switch conn := conn.(type) {
	case *net.TCPConn:
		return &countedTCP{conn, s}
	case *net.UnixConn:
		return &countedUnix{conn, s}
	}
	if sc, ok := conn.(syscall.Conn); ok {
		return &countedRaw{conn, sc, s}
	}
	return &countedConn{conn, s}
}

// slot is one connection's place, given back once.
type slot struct {
	c    *connCount
	done atomic.Bool
	// writeUntil is the write deadline the connection's writes set last
	// (writeStalling); one goroutine writes at a time.
	writeUntil time.Time
}

func (s *slot) free() {
	if s.done.CompareAndSwap(false, true) {
		s.c.open.Add(-1)
	}
}

type countedTCP struct {
	*net.TCPConn
	s *slot
}

func (c *countedTCP) Write(p []byte) (int, error) { return writeConn(c.TCPConn, c.s, p) }

func (c *countedTCP) Close() error {
	err := c.TCPConn.Close()
	c.s.free()
	return err
}

type countedUnix struct {
	*net.UnixConn
	s *slot
}

func (c *countedUnix) Write(p []byte) (int, error) { return writeConn(c.UnixConn, c.s, p) }

func (c *countedUnix) Close() error {
	err := c.UnixConn.Close()
	c.s.free()
	return err
}

type countedRaw struct {
	net.Conn
	sc syscall.Conn
	s  *slot
}

func (c *countedRaw) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

func (c *countedRaw) Write(p []byte) (int, error) { return writeConn(c.Conn, c.s, p) }

func (c *countedRaw) Close() error {
	err := c.Conn.Close()
	c.s.free()
	return err
}

type countedConn struct {
	net.Conn
	s *slot
}

func (c *countedConn) Write(p []byte) (int, error) { return writeConn(c.Conn, c.s, p) }

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.s.free()
	return err
}
