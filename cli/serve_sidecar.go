package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/comb-broker/comb/httpd"
	"github.com/spf13/pflag"
)

// sidecarConfig is what lets comb run as the child process of an app:
// where it listens besides TCP, how it says it is ready, and what ends it
// besides a signal (docs/embedding.md).
type sidecarConfig struct {
	unix           string
	unixMode       string
	readyFile      string
	exitWithParent bool
	exitOnStdinEOF bool
}

func (m *App) sidecarFlags(fs *pflag.FlagSet) *sidecarConfig {
	c := &sidecarConfig{}
	fs.StringVar(&c.unix, "unix", "", "also serve on this Unix domain socket; requests over it need no token (env COMB_UNIX)")
	fs.StringVar(&c.unixMode, "unix-mode", "0600", "file mode of the --unix socket, in octal (env COMB_UNIX_MODE)")
	fs.StringVar(&c.readyFile, "ready-file", "", "once serving, write the ready line to this file (atomically: temp file and rename) (env COMB_READY_FILE)")
	fs.BoolVar(&c.exitWithParent, "exit-with-parent", false, "shut down cleanly when the process that started comb exits (env COMB_EXIT_WITH_PARENT)")
	fs.BoolVar(&c.exitOnStdinEOF, "exit-on-stdin-eof", false, "shut down cleanly when standard input reaches end of file (the parent closed the pipe or died) (env COMB_EXIT_ON_STDIN_EOF)")
	for _, name := range []string{"unix", "unix-mode", "ready-file", "exit-with-parent", "exit-on-stdin-eof"} {
		m.setting(fs, name, "")
	}
	return c
}

// listen binds what the flags ask: TCP at addr unless it is empty, the
// Unix socket if set, or both behind one listener.
func (c *sidecarConfig) listen(addr string, cfg *httpd.Config) (ln net.Listener, tcp net.Addr, err error) {
	if addr == "" && c.unix == "" {
		return nil, nil, errors.New(`--addr "" turns TCP off: give --unix PATH to listen somewhere`)
	}
	var lns []net.Listener
	if addr != "" {
		l, err := httpd.Listen(addr, *cfg)
		if err != nil {
			return nil, nil, err
		}
		tcp = l.Addr()
		lns = append(lns, l)
	}
	if c.unix != "" {
		mode, err := strconv.ParseUint(c.unixMode, 8, 32)
		if err != nil || mode > 0o777 {
			closeAll(lns)
			return nil, nil, fmt.Errorf("--unix-mode %q: want an octal file mode such as 0600", c.unixMode)
		}
		l, err := httpd.ListenUnix(c.unix, os.FileMode(mode))
		if err != nil {
			closeAll(lns)
			return nil, nil, err
		}
		cfg.TrustUnixPeers = true
		lns = append(lns, l)
	}
	if len(lns) == 1 {
		return lns[0], tcp, nil
	}
	return newMultiListener(lns), tcp, nil
}

func closeAll(lns []net.Listener) {
	for _, l := range lns {
		l.Close()
	}
}

// readyLine is what comb prints on stdout, and writes to --ready-file, once
// it accepts connections: one JSON object on one line.
type readyLine struct {
	Ready   bool   `json:"ready"`
	URL     string `json:"url,omitempty"`
	Unix    string `json:"unix,omitempty"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
}

// announce prints the ready line on stdout and writes the ready file.
func (c *sidecarConfig) announce(stdout io.Writer, tcp net.Addr) error {
	line := readyLine{Ready: true, Unix: c.unix, PID: os.Getpid(), Version: version}
	if tcp != nil {
		line.URL = "http://" + tcp.String()
	}
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("ready line: %w", err)
	}
	b = append(b, '\n')
	// The file goes first: a parent that has read the line may read the
	// file at once and must find it.
	var ferr error
	if c.readyFile != "" {
		ferr = writeFileAtomic(c.readyFile, b)
	}
	// A parent that stopped reading stdout is not a reason to stop.
	_, _ = stdout.Write(b)
	return ferr
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so a reader polling path sees nothing or all of it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("ready file: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("ready file: %w", err)
	}
	return nil
}

// watch returns a context that also ends when the parent exits or stdin
// reaches EOF, as the flags ask; stop releases what watches.
func (c *sidecarConfig) watch(ctx context.Context, stdin io.Reader, log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if c.exitWithParent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if watchParent(ctx) {
				log.Info("parent process exited: shutting down")
				cancel()
			}
		}()
	}
	if c.exitOnStdinEOF && stdin != nil {
		// Not waited for: a read of stdin cannot be interrupted, so this
		// goroutine ends at EOF or with the process.
		go func() {
			io.Copy(io.Discard, stdin)
			if ctx.Err() == nil {
				log.Info("standard input closed: shutting down")
			}
			cancel()
		}()
	}
	return ctx, func() { cancel(); wg.Wait() }
}

// multiListener accepts from several listeners, so one http.Server serves
// TCP and the Unix socket with one shutdown.
type multiListener struct {
	lns    []net.Listener
	conns  chan net.Conn
	errs   chan error
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, conns: make(chan net.Conn), errs: make(chan error, len(lns)), closed: make(chan struct{})}
	for _, l := range lns {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					m.errs <- err
					return
				}
				select {
				case m.conns <- c:
				case <-m.closed:
					c.Close()
					return
				}
			}
		}()
	}
	return m
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case err := <-m.errs:
		return nil, err
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	var err error
	m.once.Do(func() {
		close(m.closed)
		for _, l := range m.lns {
			err = errors.Join(err, l.Close())
		}
		m.wg.Wait()
	})
	return err
}

func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
