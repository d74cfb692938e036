package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

// Tests of comb serve beside the tools users point at its file: the
// sqlite3 shell, backups, checks and a second server by another name, each
// a real process.

// neighbourPush pushes one message with transactionId id to queue q,
// partition p0, and reports whether it was answered 201.
func neighbourPush(t *testing.T, client *http.Client, base, id string) bool {
	t.Helper()
	status, body, err := crashDo(context.Background(), client, http.MethodPost, base+"/api/v1/push",
		map[string]any{"items": []map[string]any{{"queue": "q", "partition": "p0", "transactionId": id, "payload": map[string]any{"id": id}}}})
	if err != nil {
		t.Fatalf("push %s: %v", id, err)
	}
	if status != http.StatusCreated {
		t.Errorf("push %s: %d %s", id, status, crashSnippet(body))
	}
	return status == http.StatusCreated
}

// neighbourComb runs the comb binary and returns its output.
func neighbourComb(t *testing.T, bin string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// neighbourVerify restarts a server on db after a kill and checks that
// every id of answered is delivered, and that comb check is clean.
func neighbourVerify(t *testing.T, bin, db string, answered []string) {
	t.Helper()
	if out, err := neighbourComb(t, bin, nil, "check", "--db", db); err != nil {
		t.Errorf("comb check after the kill: %v\n%s", err, out)
	}
	srv := crashStartServer(t, bin, db, "restarted")
	got, errs := crashDrain(crashNewClient(), srv.base, "q", "verify", 1, true)
	for _, e := range errs {
		t.Error(e)
	}
	seen := map[string]bool{}
	for _, m := range got {
		seen[m.TransactionID] = true
	}
	lost := 0
	for _, id := range answered {
		if !seen[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d pushes answered 201 are lost", lost, len(answered))
	}
}

// TestOnlineBackupThenSQLite3LosesNothing is the reported sequence: push,
// take an online backup both ways, run the sqlite3 shell on the file, push
// more, copy the file with comb backup --db, kill -9, restart. The shell
// must leave the WAL and -shm of the running server in place, the copy
// must hold every answered push, the next online backup must work, and
// nothing answered may be lost.
func TestOnlineBackupThenSQLite3LosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server binary; skipped with -short")
	}
	combtest.SQLite3(t)
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "comb.db")
	client := crashNewClient()
	srv := crashStartServer(t, bin, db, "first")
	var answered []string
	push := func(prefix string, n int) {
		for i := range n {
			id := fmt.Sprintf("%s-%d", prefix, i)
			if neighbourPush(t, client, srv.base, id) {
				answered = append(answered, id)
			}
		}
	}
	push("before", 10)

	resp, err := client.Get(srv.base + "/api/v1/system/backup")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("online backup: %d", resp.StatusCode)
	}
	if out, err := neighbourComb(t, bin, []string{"COMB_URL=" + srv.base}, "backup", "--out", filepath.Join(dir, "b1.db")); err != nil {
		t.Fatalf("comb backup --url: %v\n%s", err, out)
	}
	if got := combtest.SQLite3Exec(t, db, "select count(*) from queues"); got != "1" {
		t.Fatalf("sqlite3 counted %q queues", got)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(db + side); err != nil {
			t.Errorf("after the sqlite3 session: %v", err)
		}
	}

	push("after", 100)
	out, err := neighbourComb(t, bin, nil, "backup", "--db", db, "--out", filepath.Join(dir, "b2.db"))
	if err != nil || !strings.Contains(out, " 110 messages, check ok") {
		t.Errorf("comb backup --db after 110 pushes: %v\n%s", err, out)
	}
	if out, err := neighbourComb(t, bin, []string{"COMB_URL=" + srv.base}, "backup", "--out", filepath.Join(dir, "b3.db")); err != nil ||
		!strings.Contains(out, " 110 messages, check ok") {
		t.Errorf("second online backup: %v\n%s", err, out)
	}

	if err := srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
	neighbourVerify(t, bin, db, answered)
}

// TestSecondServeByAnotherNameIsRefused: a second comb serve on the same
// file reached by a symlink, a hard link, a path through "." and "..", or
// the plain path exits 1 with one line, and the first keeps serving.
func TestSecondServeByAnotherNameIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server binary; skipped with -short")
	}
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	other := t.TempDir()
	db := filepath.Join(dir, "c.db")
	client := crashNewClient()
	first := crashStartServer(t, bin, db, "first")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	names := []struct{ name, path string }{
		{"plain path", db},
		{"symlink", filepath.Join(other, "link.db")},
		{"hard link", filepath.Join(other, "hard.db")},
		{"dot-dot", dir + "/./sub/../c.db"},
	}
	if err := os.Symlink(db, names[1].path); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(db, names[2].path); err != nil {
		t.Fatal(err)
	}
	var answered []string
	for i, n := range names {
		t.Run(n.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve", "--addr", crashFreeAddr(t), "--db", n.path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || ctx.Err() != nil {
				t.Fatalf("second serve by %s exited %v (timed out: %v), want code 1; stderr:\n%s", n.path, err, ctx.Err() != nil, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "comb: ") || !strings.Contains(last, "in use by another comb process") {
				t.Fatalf("second serve stderr:\n%s", stderr.String())
			}
			id := fmt.Sprintf("after-%d", i)
			if neighbourPush(t, client, first.base, id) {
				answered = append(answered, id)
			}
		})
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	neighbourVerify(t, bin, db, answered)
}

// TestSigtermBesideAnOutsideReaderStopsPromptly: a sqlite3 session holding
// a read transaction (as litestream always does) keeps the closing
// checkpoint from truncating the WAL. comb serve must not wait for it: it
// stops at once, says in one log line that the WAL is left for the next
// start, and the next start has every answered push.
func TestSigtermBesideAnOutsideReaderStopsPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server binary; skipped with -short")
	}
	combtest.SQLite3(t)
	bin := crashBuildBinary(t)
	db := filepath.Join(t.TempDir(), "comb.db")
	client := crashNewClient()
	srv := crashStartServer(t, bin, db, "first")
	var answered []string
	for i := range 20 {
		if i == 10 {
			combtest.StartSQLite3Reader(t, db)
		}
		id := fmt.Sprintf("m-%d", i)
		if neighbourPush(t, client, srv.base, id) {
			answered = append(answered, id)
		}
	}
	client.CloseIdleConnections()
	start := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("comb serve did not stop within 30 s of SIGTERM")
	}
	took := time.Since(start)
	t.Logf("SIGTERM to exit with a reader in a transaction: %v", took)
	if took > 5*time.Second {
		t.Errorf("SIGTERM to exit took %v with an outside reader", took)
	}
	if code := srv.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("comb serve exited %d after SIGTERM", code)
	}
	logText, err := os.ReadFile(srv.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(logText), "the WAL is left for the next start"); n != 1 {
		t.Errorf("%d log lines about the WAL left, want 1:\n%s", n, logText)
	}
	neighbourVerify(t, bin, db, answered)
}

// TestCheckAndBackupRefuseAStaleFile: with the -wal and -shm of a running server
// removed from the directory (by hand, or by a tool that believed itself
// the last user), the file lacks the server's recent writes. comb check and
// comb backup --db, each in its own process, must say so and fail instead of
// reporting the stale file as fine.
func TestCheckAndBackupRefuseAStaleFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server binary; skipped with -short")
	}
	combtest.SQLite3(t)
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "comb.db")
	client := crashNewClient()
	srv := crashStartServer(t, bin, db, "first")
	var answered []string
	for i := range 20 {
		if i == 10 {
			// The first ten reach the file itself, the rest only the WAL.
			combtest.SQLite3Exec(t, db, "PRAGMA wal_checkpoint")
		}
		id := fmt.Sprintf("m-%d", i)
		if neighbourPush(t, client, srv.base, id) {
			answered = append(answered, id)
		}
	}
	// Stopped, the server cannot notice the removal (it does within
	// 100 ms) and copy its WAL into the file before the two look at it.
	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.Remove(db + side); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"check", "--db", db},
		{"backup", "--db", db, "--out", filepath.Join(dir, "copy.db")},
	} {
		out, err := neighbourComb(t, bin, nil, args...)
		if err == nil || !strings.Contains(out, "database file is stale") {
			t.Errorf("comb %s on a stale file: %v\n%s", args[0], err, out)
		}
	}
	// Running again, it finds the -wal removed, writes the WAL it still
	// holds into the file and stops.
	if err := srv.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("comb serve did not stop within 30 s of its -wal removed")
	}
	neighbourVerify(t, bin, db, answered)
}
