package combtest

import (
	"bytes"
	"log/slog"
	"sync"
)

// Logs is a log or output sink that the code under test writes from its own
// goroutines while the test reads it.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Logger is a text logger writing to l.
func (l *Logs) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
