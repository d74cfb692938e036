// Package queentest runs a real Queen server on a throwaway PostgreSQL for
// tests that must agree with Queen or talk to it as an upstream. It drives
// the kit in the shared folder beside the checkout (shared/queen/run.sh, or
// the folder named by QUEEN_KIT), which installs PostgreSQL 15 from Debian
// when it is missing.
//
// A test that needs Queen calls Start. Where the kit or PostgreSQL cannot be
// had, Start skips the test, except under CI=true, where it fails: CI must
// always meet the real Queen.
package queentest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Queen is one running Queen and its PostgreSQL, stopped at the test's
// cleanup.
type Queen struct {
	// URL is Queen's base URL, http://127.0.0.1:PORT; it stays the same
	// across Kill and Restart.
	URL string
	// Dir holds the cluster, Queen's copy, its log (queen.log) and env.
	Dir string

	tb  testing.TB
	kit string
}

// Kit returns the path of run.sh, or "" when none is found. QUEEN_KIT names
// the kit's folder; otherwise the shared folder beside the module's root is
// searched from the working directory upwards.
func Kit() string {
	if d := os.Getenv("QUEEN_KIT"); d != "" {
		p := filepath.Join(d, "run.sh")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, "..", "shared", "queen", "run.sh")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// unavailable skips the test, or fails it under CI=true.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("real Queen required under CI=true: %s", msg)
	}
	tb.Skipf("real Queen unavailable: %s", msg)
}

// Start starts Queen and PostgreSQL in a new directory and stops both at
// cleanup. extraEnv ("KEY=VALUE") is passed to the kit, and through it to
// Queen (see run.sh for the variables it reads).
func Start(tb testing.TB, extraEnv ...string) *Queen {
	tb.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		unavailable(tb, "the kit's Queen is built for linux/amd64")
	}
	kit := Kit()
	if kit == "" {
		unavailable(tb, "no shared/queen/run.sh beside the checkout and QUEEN_KIT unset")
	}
	// Not t.TempDir: its parents are 0700, which the kit works around by
	// moving the cluster to /tmp; a directory of our own keeps it in one place.
	dir, err := os.MkdirTemp("", "comb-queen-")
	if err != nil {
		tb.Fatalf("queen dir: %v", err)
	}
	q := &Queen{Dir: dir, tb: tb, kit: kit}
	tb.Cleanup(func() {
		q.run(2*time.Minute, nil, "stop")
		if !tb.Failed() {
			os.RemoveAll(dir)
		} else {
			tb.Logf("queen: kept %s (queen.log, pg/pg.log) for the failed test", dir)
		}
	})
	out, err := q.run(5*time.Minute, extraEnv, "start")
	if err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(out, "PostgreSQL") && strings.Contains(out, "ERROR") {
			unavailable(tb, "%v: %s", err, lastLines(out, 5))
		}
		tb.Fatalf("queen start: %v\n%s", err, lastLines(out, 20))
	}
	q.URL = urlFrom(out)
	if q.URL == "" {
		tb.Fatalf("queen start printed no QUEEN_URL:\n%s", lastLines(out, 20))
	}
	return q
}

// Kill sends SIGKILL to Queen only; PostgreSQL keeps running.
func (q *Queen) Kill() {
	q.tb.Helper()
	if out, err := q.run(time.Minute, nil, "kill"); err != nil {
		q.tb.Fatalf("queen kill: %v\n%s", err, lastLines(out, 10))
	}
}

// Restart starts Queen again on the port it had, against the same data.
func (q *Queen) Restart() {
	q.tb.Helper()
	out, err := q.run(2*time.Minute, nil, "start-queen")
	if err != nil {
		q.tb.Fatalf("queen start-queen: %v\n%s", err, lastLines(out, 20))
	}
	if u := urlFrom(out); u != "" && u != q.URL {
		q.tb.Fatalf("queen came back on %s, not %s", u, q.URL)
	}
}

// Log returns Queen's log so far, for a failing test to print.
func (q *Queen) Log() string {
	b, _ := os.ReadFile(filepath.Join(q.Dir, "queen.log"))
	return string(b)
}

func (q *Queen) run(limit time.Duration, extraEnv []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{q.kit}, append(args, q.Dir)...)...)
	cmd.Env = append(os.Environ(), extraEnv...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("run.sh %s: %w", strings.Join(args, " "), err)
	}
	return buf.String(), err
}

func urlFrom(out string) string {
	url := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "QUEEN_URL="); ok {
			url = v
		}
	}
	return url
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
