package httpd

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrSocketInUse is returned by ListenUnix when another process answers on
// the socket path.
var ErrSocketInUse = errors.New("socket in use by another server")

// ListenUnix binds a Unix domain socket at path with the file mode mode
// (0600: only the owner's processes may connect). A socket file left by a
// server that died without removing it (kill -9) is replaced; one that a
// live server still answers on is refused with ErrSocketInUse. Closing the
// listener removes the file, unless another server has replaced it since.
//
// The socket is bound under a temporary name, given its mode, then renamed
// into place, so it is never reachable at path with a wider mode than asked.
func ListenUnix(path string, mode os.FileMode) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("listen unix: empty path")
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen unix %s: exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("listen unix %s: %w", path, ErrSocketInUse)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, os.ErrNotExist) && !isStaleSocketErr(err) {
			return nil, fmt.Errorf("listen unix %s: probing the existing socket: %w", path, err)
		}
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+strconv.Itoa(os.Getpid())+".tmp")
	if runtime.GOOS == "windows" {
		// Windows keeps no Unix file modes on the socket (its ACL follows
		// the directory's), so there is nothing to set before it is
		// reachable, and renaming its reparse point is not relied upon.
		tmp = path
	}
	os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	// The file is removed by our Close under its final name, not by Go
	// under the temporary one.
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, mode); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("listen unix %s: chmod: %w", path, err)
	}
	if tmp == path {
		// bound in place
	} else if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	return &unixListener{Listener: ln, path: path, file: fi}, nil
}

// unixListener removes its socket file on Close.
type unixListener struct {
	net.Listener
	path string
	file os.FileInfo
	once sync.Once
}

// Addr names the final path, not the temporary one the socket was bound to.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *unixListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() {
		// Only our own file: a later server may have replaced a socket
		// it found dead, and its file must stay.
		if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.file) {
			os.Remove(l.path)
		}
	})
	return err
}

// arrivedOnUnix reports whether r came in over a Unix domain socket.
func arrivedOnUnix(r *http.Request) bool {
	_, ok := r.Context().Value(http.LocalAddrContextKey).(*net.UnixAddr)
	return ok
}
