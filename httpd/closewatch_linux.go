//go:build linux

package httpd

import (
	"fmt"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// closeWatch tells, for every connection it holds, when its peer hangs
// up or, if asked, sends, from one epoll set read by one goroutine.
// net/http learns either with a read blocked in a goroutine of its own
// per connection; a parked long-poll taken out of net/http (parking.go),
// and its connection until its next request, are watched here instead,
// so that thousands of them cost no goroutine and no read each.
type closeWatch struct {
	epfd, stopfd int
	mu           sync.Mutex
	byFD         map[int32]watched
	gen          int32         // tells a descriptor's watches apart
	stopped      bool          // epfd is closed: its number may be another file's
	done         chan struct{} // closed when run has returned
}

// watched is one watch of a descriptor: fn is called once with what
// happened (hungUp, readable or both: a peer that closes is readable too). The generation travels in the event, so a report read
// just before a remove is never matched with the next add of the same
// descriptor number.
type watched struct {
	gen int32
	fn  func(watchEvent)
}

// watchEvent is what a watch reports.
type watchEvent uint8

const (
	hungUp   watchEvent = 1 << iota // the peer closed, or the connection failed
	readable                        // bytes arrived, or the end of them
)

// newCloseWatch starts a watch; stop ends it.
func newCloseWatch() (*closeWatch, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	stopfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(stopfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, stopfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(stopfd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	w := &closeWatch{epfd: epfd, stopfd: stopfd, byFD: map[int32]watched{}, done: make(chan struct{})}
	go w.run()
	return w, nil
}

// add watches c until remove: fn is called, once and from the watch's
// goroutine, when its peer sends something or hangs up. It must not block. c must stay open until remove has returned,
// so its descriptor is not reused under the watch.
func (w *closeWatch) add(c net.Conn, fn func(watchEvent)) (fd int32, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("closeWatch: %T has no descriptor", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("closeWatch: %w", err)
	}
	var cerr error
	err = raw.Control(func(d uintptr) {
		fd = int32(d)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			cerr = net.ErrClosed
			return
		}
		w.gen++
		w.byFD[fd] = watched{gen: w.gen, fn: fn}
		// One shot: a hang-up stays reported while the descriptor is
		// open, and one report is all a watcher needs.
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: fd, Pad: w.gen}
		if cerr = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(d), &ev); cerr != nil {
			delete(w.byFD, fd)
		}
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return -1, fmt.Errorf("closeWatch: epoll_ctl add: %w", err)
	}
	return fd, nil
}

// swap has the watch of fd, whose report has not come, call fn instead
// when it does. No system call: a parked connection is watched for its
// next request from the start (parking.take), so once answered it waits
// for it under the same watch; at 10,000 parked, one epoll_ctl each
// after its answer took a seventh of a wake's CPU. False if the report
// came first (its fn is called or running).
func (w *closeWatch) swap(fd int32, fn func(watchEvent)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, ok := w.byFD[fd]
	if !ok || w.stopped {
		return false
	}
	wd.fn = fn
	w.byFD[fd] = wd
	return true
}

// remove stops watching fd. Once it returns, fn is not called any more
// (it may have been called already, or be running now).
func (w *closeWatch) remove(fd int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	delete(w.byFD, fd)
	unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
}

// run reads the set until stop.
func (w *closeWatch) run() {
	defer close(w.done)
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Nothing the set can recover from; the watched connections
			// are still answered when their pops end, only not early.
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == int32(w.stopfd) {
				return
			}
			w.mu.Lock()
			var fn func(watchEvent)
			if wd, ok := w.byFD[ev.Fd]; ok && wd.gen == ev.Pad {
				fn = wd.fn
				delete(w.byFD, ev.Fd)
			}
			w.mu.Unlock()
			if fn == nil {
				continue
			}
			var what watchEvent
			if ev.Events&unix.EPOLLIN != 0 {
				what |= readable
			}
			if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				what |= hungUp
			}
			fn(what)
		}
	}
}

// stop ends the watch and waits for its goroutine. Connections still
// watched are not closed: their owners do that.
func (w *closeWatch) stop() {
	var one [8]byte
	one[0] = 1 // an eventfd counter is added to in host order; any non-zero wakes it
	unix.Write(w.stopfd, one[:])
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.byFD = nil
	unix.Close(w.epfd)
	unix.Close(w.stopfd)
}
