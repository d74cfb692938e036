package sdnotify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// manager is the service manager's end: a real unixgram socket.
type manager struct {
	t    *testing.T
	conn *net.UnixConn
	name string
}

func listen(t *testing.T, name string) *manager {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &manager{t: t, conn: conn, name: name}
}

// next returns the next datagram, failing the test after a generous wait.
func (m *manager) next() string {
	m.t.Helper()
	m.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := m.conn.Read(buf)
	if err != nil {
		m.t.Fatalf("read notify socket: %v", err)
	}
	return string(buf[:n])
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestWithoutSocketNothingIsSent(t *testing.T) {
	n, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if n.Enabled() || n.WatchdogInterval() != 0 {
		t.Fatalf("notifier without NOTIFY_SOCKET: enabled %v, watchdog %v", n.Enabled(), n.WatchdogInterval())
	}
	if err := n.Notify("READY=1"); err != nil {
		t.Fatal(err)
	}
	n.Serving(context.Background(), quiet, nil)()
}

func TestReadyWatchdogStopping(t *testing.T) {
	m := listen(t, filepath.Join(t.TempDir(), "notify.sock"))
	n, err := FromEnv(env(map[string]string{
		"NOTIFY_SOCKET": m.name,
		"WATCHDOG_USEC": "20000",
		"WATCHDOG_PID":  strconv.Itoa(os.Getpid()),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := n.WatchdogInterval(); got != 10*time.Millisecond {
		t.Fatalf("watchdog interval %v, want half of WATCHDOG_USEC, 10ms", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := n.Serving(ctx, quiet, nil)
	if got := m.next(); got != "READY=1\nSTATUS=serving" {
		t.Fatalf("first datagram %q, want READY=1", got)
	}
	for range 2 {
		if got := m.next(); got != "WATCHDOG=1" {
			t.Fatalf("datagram %q, want WATCHDOG=1", got)
		}
	}
	cancel()
	// Pings sent before the cancellation was seen may still be queued.
	for {
		got := m.next()
		if got == "WATCHDOG=1" {
			continue
		}
		if got != "STOPPING=1\nSTATUS=stopping" {
			t.Fatalf("datagram %q after shutdown began, want STOPPING=1", got)
		}
		break
	}
	stop()
	stop = nil
	// Nothing after STOPPING: the goroutine is gone.
	m.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := m.conn.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after stop: %d bytes, %v; want nothing", n, err)
	}
}

// A failing check withholds the ping, so the manager's watchdog fires.
func TestFailingCheckWithholdsWatchdog(t *testing.T) {
	m := listen(t, filepath.Join(t.TempDir(), "notify.sock"))
	n, err := FromEnv(env(map[string]string{"NOTIFY_SOCKET": m.name, "WATCHDOG_USEC": "20000"}))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	check := func(ctx context.Context) error {
		if calls.Add(1) <= 3 {
			return errors.New("database unreachable")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := n.Serving(ctx, quiet, check)
	defer stop()
	if got := m.next(); got != "READY=1\nSTATUS=serving" {
		t.Fatalf("first datagram %q, want READY=1", got)
	}
	if got := m.next(); got != "WATCHDOG=1" {
		t.Fatalf("datagram %q, want WATCHDOG=1", got)
	}
	if c := calls.Load(); c < 4 {
		t.Fatalf("watchdog pinged after %d checks, the first 3 of which failed", c)
	}
}

func TestWatchdogOfAnotherProcessIsIgnored(t *testing.T) {
	n, err := FromEnv(env(map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "20000", "WATCHDOG_PID": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if n.WatchdogInterval() != 0 {
		t.Fatalf("watchdog %v for pid 1, want none", n.WatchdogInterval())
	}
}

func TestBadWatchdogUsec(t *testing.T) {
	for _, v := range []string{"abc", "0", "-5"} {
		if _, err := FromEnv(env(map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": v})); err == nil {
			t.Errorf("WATCHDOG_USEC=%q accepted", v)
		}
	}
}

// systemd may hand out a socket in the abstract namespace, named with "@".
func TestAbstractSocket(t *testing.T) {
	name := fmt.Sprintf("@comb-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	m := listen(t, name)
	n, err := FromEnv(env(map[string]string{"NOTIFY_SOCKET": name}))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Notify("READY=1"); err != nil {
		t.Fatal(err)
	}
	if got := m.next(); got != "READY=1" {
		t.Fatalf("datagram %q, want READY=1", got)
	}
}

func TestUnreachableSocketIsAnError(t *testing.T) {
	n, err := FromEnv(env(map[string]string{"NOTIFY_SOCKET": filepath.Join(t.TempDir(), "nobody")}))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Notify("READY=1"); err == nil {
		t.Fatal("notify to a missing socket succeeded")
	}
}
