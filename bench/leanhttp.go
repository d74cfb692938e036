package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// leanTimeout bounds one request when ctx sets no earlier deadline, as the
// net/http client's Timeout does, so a stuck server fails a row instead of
// hanging it.
const leanTimeout = 60 * time.Second

// leanConn is one persistent HTTP/1.1 connection owned by one worker. It
// speaks only what comb's push, pop and ack routes need, so a row spends the
// machine's CPU in the server rather than in net/http's per-connection
// goroutines, header maps and pool, as the NATS client lets JetStream's rows
// do. It is not safe for concurrent use.
type leanConn struct {
	addr    string // host:port
	headers []byte // "Host: ...\r\nContent-Type: application/json\r\n", built once
	conn    net.Conn
	br      *bufio.Reader
	req     []byte // the request being written, reused
	body    []byte // the last response body, reused
	watched context.Context
	unwatch func() bool // stops closing conn when watched is done
}

func newLeanConn(addr string) *leanConn {
	return &leanConn{addr: addr, headers: []byte("Host: " + addr + "\r\nContent-Type: application/json\r\n")}
}

// Close closes the connection; the next request dials a new one.
func (c *leanConn) Close() error {
	if c.conn == nil {
		return nil
	}
	c.unwatch()
	err := c.conn.Close()
	c.conn, c.watched = nil, nil
	return err
}

// do sends one request and returns the status and body. The body is valid
// until the next call.
func (c *leanConn) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	for attempt := 0; ; attempt++ {
		reused := c.conn != nil
		st, data, replied, err := c.roundTrip(ctx, method, path, body)
		if err == nil {
			return st, data, nil
		}
		c.Close()
		cerr := ctx.Err()
		if d, ok := ctx.Deadline(); ok && cerr == nil && !time.Now().Before(d) {
			cerr = context.DeadlineExceeded // the conn's deadline, set from ctx's, fired first
		}
		if cerr != nil {
			return 0, nil, fmt.Errorf("%s %s: %w", method, path, cerr)
		}
		// A server may close a connection that sat idle just as a request is
		// sent on it; it never saw that request, so it goes once more on a
		// fresh connection, as net/http retries errServerClosedIdle.
		if reused && !replied && attempt == 0 && (errors.Is(err, io.EOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
			continue
		}
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
}

// roundTrip writes the request in one Write and reads the response;
// replied says whether any byte of the response arrived.
func (c *leanConn) roundTrip(ctx context.Context, method, path string, body []byte) (st int, data []byte, replied bool, err error) {
	if c.conn == nil {
		var d net.Dialer
		if c.conn, err = d.DialContext(ctx, "tcp", c.addr); err != nil {
			return 0, nil, false, err
		}
		c.br = bufio.NewReaderSize(c.conn, 16<<10)
	}
	if c.watched != ctx {
		if c.watched != nil {
			c.unwatch()
		}
		// Closing the connection is what wakes a read blocked on a server
		// that a cancelled run no longer waits for.
		conn := c.conn
		c.watched, c.unwatch = ctx, context.AfterFunc(ctx, func() { conn.Close() })
	}
	deadline := time.Now().Add(leanTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return 0, nil, false, err
	}
	r := append(c.req[:0], method...)
	r = append(append(append(r, ' '), path...), " HTTP/1.1\r\n"...)
	r = append(r, c.headers...)
	if body != nil {
		r = strconv.AppendInt(append(r, "Content-Length: "...), int64(len(body)), 10)
		r = append(r, "\r\n"...)
	}
	r = append(append(r, "\r\n"...), body...)
	c.req = r
	if _, err := c.conn.Write(r); err != nil {
		return 0, nil, false, err
	}

	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, len(line) > 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, true, fmt.Errorf("bad status line %q", line)
	}
	if st, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, nil, true, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closing := -1, false, false
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, true, fmt.Errorf("read headers: %w", err)
		}
		name, value, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case len(name) == 0:
			c.body = c.body[:0]
			switch {
			case st == 204 || st == 304 || method == "HEAD":
			case chunked:
				err = c.readChunked()
			case length >= 0:
				c.body = grow(c.body, length)
				_, err = io.ReadFull(c.br, c.body)
			default:
				err = errors.New("response has neither Content-Length nor chunked encoding")
			}
			if err != nil {
				return 0, nil, true, fmt.Errorf("read body of HTTP %d: %w", st, err)
			}
			if closing {
				c.Close()
			}
			return st, c.body, true, nil
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, true, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return 0, nil, true, fmt.Errorf("unsupported Transfer-Encoding %q", value)
			}
			chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
}

// readChunked appends a chunked body to c.body and skips its trailers.
func (c *leanConn) readChunked() error {
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("chunk size: %w", err)
		}
		hex, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseUint(string(bytes.TrimSpace(hex)), 16, 31)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for { // trailers, up to the empty line
				if line, err = c.br.ReadSlice('\n'); err != nil || len(bytes.TrimRight(line, "\r\n")) == 0 {
					return err
				}
			}
		}
		at := len(c.body)
		c.body = grow(c.body, at+int(n)+2) // the chunk and its CRLF
		if _, err := io.ReadFull(c.br, c.body[at:]); err != nil {
			return fmt.Errorf("chunk: %w", err)
		}
		if !bytes.HasSuffix(c.body, []byte("\r\n")) {
			return errors.New("chunk not followed by CRLF")
		}
		c.body = c.body[:at+int(n)]
	}
}

// grow returns b, contents kept, lengthened to n bytes, reusing its array
// when it is big enough.
func grow(b []byte, n int) []byte { return slices.Grow(b, n-len(b))[:n] }
