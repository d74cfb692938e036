// Package sdnotify tells a service manager that speaks systemd's notify
// protocol (sd_notify(3)) when comb is ready, that it is alive, and that it
// is stopping: one datagram per state on the unix socket named by
// $NOTIFY_SOCKET. Without that variable every call does nothing, so the
// same binary runs under a plain shell, a container runtime or systemd.
package sdnotify

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Notifier sends states to the service manager. The zero value and nil
// send nothing.
type Notifier struct {
	socket   string        // $NOTIFY_SOCKET; "" = no manager listens
	watchdog time.Duration // $WATCHDOG_USEC meant for this process; 0 = none
}

// FromEnv reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID through
// getenv. A watchdog meant for another process (WATCHDOG_PID not ours) is
// ignored, as sd_watchdog_enabled(3) does.
func FromEnv(getenv func(string) string) (*Notifier, error) {
	n := &Notifier{socket: getenv("NOTIFY_SOCKET")}
	if n.socket == "" {
		return n, nil
	}
	usec := getenv("WATCHDOG_USEC")
	if usec == "" {
		return n, nil
	}
	if pid := getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return n, nil
	}
	v, err := strconv.ParseInt(usec, 10, 64)
	if err != nil || v <= 0 {
		return n, fmt.Errorf("WATCHDOG_USEC %q: want a positive number of microseconds", usec)
	}
	n.watchdog = time.Duration(v) * time.Microsecond
	return n, nil
}

// Enabled reports whether a service manager listens.
func (n *Notifier) Enabled() bool { return n != nil && n.socket != "" }

// WatchdogInterval is how often Serving pings the watchdog: half its
// timeout, as sd_watchdog_enabled(3) advises. 0 when there is no watchdog.
func (n *Notifier) WatchdogInterval() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog / 2
}

// Notify sends one datagram of newline-separated VAR=value assignments.
func (n *Notifier) Notify(state string) error {
	if !n.Enabled() {
		return nil
	}
	// A leading "@" names a socket in the abstract namespace; the net
	// package maps it so on Linux.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %q: %w", state, err)
	}
	return nil
}

// Serving sends READY=1, then pings the watchdog from a goroutine until
// ctx ends or the returned stop is called, and then sends STOPPING=1, so
// the manager takes the drain that follows for a shutdown and not a hang.
// Each ping first runs check, when given: a process whose check fails
// stops pinging and is restarted by the manager once the watchdog times
// out. stop waits for the goroutine; call it once serving is over.
// Failures to notify are logged, not fatal: the broker serves either way.
func (n *Notifier) Serving(ctx context.Context, log *slog.Logger, check func(context.Context) error) (stop func()) {
	if !n.Enabled() {
		return func() {}
	}
	if err := n.Notify("READY=1\nSTATUS=serving"); err != nil {
		log.Warn("notify service manager", "err", err)
	}
	pingCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.pingWatchdog(pingCtx, log, check)
		if err := n.Notify("STOPPING=1\nSTATUS=stopping"); err != nil {
			log.Warn("notify service manager", "err", err)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// pingWatchdog sends WATCHDOG=1 every WatchdogInterval until ctx ends.
func (n *Notifier) pingWatchdog(ctx context.Context, log *slog.Logger, check func(context.Context) error) {
	every := n.WatchdogInterval()
	if every <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if check != nil {
			cctx, cancel := context.WithTimeout(ctx, every)
			err := check(cctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					log.Error("health check failed; not pinging the service manager's watchdog", "err", err)
				}
				continue
			}
		}
		if err := n.Notify("WATCHDOG=1"); err != nil {
			log.Warn("notify service manager", "err", err)
		}
	}
}
