//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// fleet is the parked consumers: one connection each, spoken to in plain
// HTTP/1.1, all read by one goroutine from one epoll set. It shares the
// two processors with the server it measures, so it spends on an answer
// what any client must (the read and a look at the reply), and no more:
// net/http's client spent as much CPU as the server on a wake, and a
// goroutine blocked on each connection still cost a netpoller wake and a
// goroutine switch per answer, with a buffer per connection (touched for
// the first time by the reply, or kept resident by the thousand).
type fleet struct {
	addr    string
	rounds  int
	ep      int
	conns   []*fleetConn
	answers [][]answer
	woken   []sync.WaitGroup
	done    chan struct{}
}

// fleetConn is one consumer's connection and where it is in its rounds.
type fleetConn struct {
	i       int
	fd      int
	round   int    // 0-based round whose pop (or, acking, whose ack) is in flight
	acking  bool   // its ack of round is in flight
	partial []byte // a reply not complete yet
	stopped bool
}

// newFleet dials n consumers to addr, each parking its pop of round 1.
func newFleet(addr string, n, rounds int) (*fleet, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	f := &fleet{addr: addr, rounds: rounds, ep: ep, conns: make([]*fleetConn, n),
		answers: make([][]answer, rounds), woken: make([]sync.WaitGroup, rounds), done: make(chan struct{})}
	for r := range rounds {
		f.answers[r] = make([]answer, n)
		f.woken[r].Add(n)
	}
	// Dial in parallel, a few at a time: the accept queue is the bound.
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := f.dial(i)
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				f.conns[i] = c
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		f.close()
		return nil, err
	default:
	}
	for _, c := range f.conns {
		if err := f.send(c, f.popRequest(c)); err != nil {
			f.close()
			return nil, err
		}
	}
	go f.loop()
	return f, nil
}

// dial connects consumer i and hands its socket, non-blocking, to the
// fleet's epoll set: the net.Conn is closed, its duplicate kept.
func (f *fleet) dial(i int) (*fleetConn, error) {
	conn, err := net.DialTimeout("tcp", f.addr, 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) { fd, dupErr = syscall.Dup(int(s)) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.EpollCtl(f.ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(i)}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return &fleetConn{i: i, fd: fd}, nil
}

func (f *fleet) popRequest(c *fleetConn) string {
	return fmt.Sprintf("GET /api/v1/pop/queue/parked?consumerGroup=g-%d&wait=true&timeout=120000&batch=1 HTTP/1.1\r\nHost: %s\r\n\r\n", c.i, f.addr)
}

// send writes req, a few hundred bytes, whole.
func (f *fleet) send(c *fleetConn, req string) error {
	b := []byte(req)
	for len(b) > 0 {
		n, err := syscall.Write(c.fd, b)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			return fmt.Errorf("consumer %d: write: %w", c.i, err)
		}
		b = b[n:]
	}
	return nil
}

// loop reads every reply as it comes until the fleet is closed.
func (f *fleet) loop() {
	events := make([]syscall.EpollEvent, 512)
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.EpollWait(f.ep, events, 100)
		select {
		case <-f.done:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		for _, ev := range events[:n] {
			f.readable(f.conns[ev.Fd], buf)
		}
	}
}

// readable reads what c has and handles each reply it completes.
func (f *fleet) readable(c *fleetConn, buf []byte) {
	for !c.stopped {
		m, err := syscall.Read(c.fd, buf)
		if errors.Is(err, syscall.EAGAIN) {
			return
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || m == 0 {
			if err == nil {
				err = errors.New("connection closed")
			}
			f.fail(c, err)
			return
		}
		data := buf[:m]
		if len(c.partial) > 0 {
			c.partial = append(c.partial, data...)
			data = c.partial
		}
		status, body, used, err := parseReply(data)
		if err != nil {
			f.fail(c, err)
			return
		}
		if used == 0 {
			if len(c.partial) == 0 {
				c.partial = append([]byte(nil), data...)
			}
			continue
		}
		at := time.Now()
		if used != len(data) {
			f.fail(c, fmt.Errorf("%d bytes after the reply", len(data)-used))
			return
		}
		c.partial = nil
		f.replied(c, at, status, body)
	}
}

// replied handles a complete reply to c's request in flight.
func (f *fleet) replied(c *fleetConn, at time.Time, status int, body []byte) {
	if c.acking {
		c.acking = false
		c.round++
		if err := f.send(c, f.popRequest(c)); err != nil {
			f.fail(c, err)
		}
		return
	}
	r := c.round
	a := answer{at: at, status: status, got: bytes.Contains(body, []byte(`"wake-`+strconv.Itoa(r+1)+`"`))}
	f.answers[r][c.i] = a
	f.woken[r].Done()
	if r+1 == f.rounds {
		c.stopped = true
		return
	}
	// Acknowledge what it got (decoded now, its time taken), then pop
	// again; with nothing to acknowledge the consumer stops.
	var got struct {
		LeaseID  string `json:"leaseId"`
		Messages []struct {
			TransactionID string `json:"transactionId"`
			PartitionID   string `json:"partitionId"`
		} `json:"messages"`
	}
	if !a.got || status != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Messages) == 0 {
		f.stop(c, r+1)
		return
	}
	m := got.Messages[0]
	ack, _ := json.Marshal(map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
		"leaseId": got.LeaseID, "status": "completed", "consumerGroup": fmt.Sprintf("g-%d", c.i)})
	c.acking = true
	if err := f.send(c, fmt.Sprintf("POST /api/v1/ack HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		f.addr, len(ack), ack)); err != nil {
		f.fail(c, err)
	}
}

// fail records err as the answer of c's pop in flight (an ack that
// failed fails the next round's) and stops c.
func (f *fleet) fail(c *fleetConn, err error) {
	if c.stopped {
		return
	}
	r := c.round
	if c.acking {
		r++
	}
	if r < f.rounds {
		f.answers[r][c.i] = answer{at: time.Now(), err: fmt.Errorf("consumer %d: %w", c.i, err)}
		f.woken[r].Done()
	}
	f.stop(c, r+1)
}

// stop ends c's rounds from round on, unanswered.
func (f *fleet) stop(c *fleetConn, round int) {
	c.stopped = true
	for l := round; l < f.rounds; l++ {
		f.woken[l].Done()
	}
	syscall.EpollCtl(f.ep, syscall.EPOLL_CTL_DEL, c.fd, nil)
}

// close closes every connection: the consumers go only once the run is
// measured, as real ones would pop again on theirs.
func (f *fleet) close() {
	close(f.done)
	for _, c := range f.conns {
		if c != nil {
			syscall.Close(c.fd)
		}
	}
	syscall.Close(f.ep)
}

// parseReply parses one HTTP/1.1 reply at the start of b: its status and
// body and the bytes it takes, 0 if b does not hold all of it yet. The
// body is sized by Content-Length or chunked.
func parseReply(b []byte) (status int, body []byte, used int, err error) {
	head := bytes.Index(b, []byte("\r\n\r\n"))
	if head < 0 {
		return 0, nil, 0, nil
	}
	lines := bytes.Split(b[:head], []byte("\r\n"))
	f := bytes.Fields(lines[0])
	if len(f) < 2 {
		return 0, nil, 0, fmt.Errorf("bad status line %q", lines[0])
	}
	if status, err = strconv.Atoi(string(f[1])); err != nil {
		return 0, nil, 0, fmt.Errorf("bad status line %q", lines[0])
	}
	length, chunked := 0, false
	for _, l := range lines[1:] {
		k, v, _ := bytes.Cut(l, []byte(":"))
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, nil, 0, fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
		}
	}
	rest := b[head+4:]
	if !chunked {
		if len(rest) < length {
			return 0, nil, 0, nil
		}
		return status, rest[:length], head + 4 + length, nil
	}
	var out []byte
	at := head + 4
	for {
		i := bytes.Index(b[at:], []byte("\r\n"))
		if i < 0 {
			return 0, nil, 0, nil
		}
		sizeField, _, _ := bytes.Cut(b[at:at+i], []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeField)), 16, 64)
		if err != nil {
			return 0, nil, 0, fmt.Errorf("bad chunk size: %w", err)
		}
		start := at + i + 2
		if int64(len(b)-start) < size+2 {
			return 0, nil, 0, nil
		}
		out = append(out, b[start:start+int(size)]...)
		at = start + int(size) + 2
		if size == 0 {
			return status, out, at, nil
		}
	}
}
