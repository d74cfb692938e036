//go:build linux

package cli

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/comb-broker/comb/store"
)

// outsideReader is a sqlite3 session holding one read transaction on a
// database, as a user's shell or a monitoring script would.
type outsideReader struct {
	cmd *exec.Cmd
	in  io.WriteCloser
}

func holdRead(t *testing.T, db string) *outsideReader {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the sqlite3 CLI is not installed")
		}
		t.Skip("the sqlite3 CLI is not installed")
	}
	cmd := exec.Command(bin, db)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &outsideReader{cmd: cmd, in: in}
	t.Cleanup(r.release)
	fmt.Fprintln(in, "BEGIN; SELECT count(*) FROM segments;")
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("sqlite3 read: %v", err)
	}
	return r
}

func (r *outsideReader) release() {
	if r.in == nil {
		return
	}
	fmt.Fprintln(r.in, "COMMIT;")
	r.in.Close()
	r.cmd.Wait()
	r.in = nil
}

func walSize(t *testing.T, db string) int64 {
	t.Helper()
	fi, err := os.Stat(db + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestTheWALShrinksBackOnceAnOutsideReaderLetsGo holds a read transaction
// open in the sqlite3 CLI while about 3 × store.WALSizeLimit of messages
// are pushed: the WAL must grow (SQLite cannot start it over under a
// reader), and once the reader lets go it must shrink back under the limit
// while the server runs, both when the server then stays idle and when
// pushes go on.
func TestTheWALShrinksBackOnceAnOutsideReaderLetsGo(t *testing.T) {
	d := startServeIn(t, t.TempDir())
	if status, body := d.push("q", "warm", 10, 1000); status != http.StatusCreated {
		t.Fatalf("push: %d %s", status, body)
	}
	for round, then := range []string{"idle", "pushing"} {
		r := holdRead(t, d.db)
		for b := 0; walSize(t, d.db) < 3*store.WALSizeLimit; b++ {
			if status, body := d.push("q", fmt.Sprintf("big-%d-%d", round, b), 100, 4000); status != http.StatusCreated {
				t.Fatalf("push: %d %s", status, body)
			}
		}
		held := walSize(t, d.db)
		r.release()
		deadline := time.Now().Add(30 * time.Second)
		for b := 0; walSize(t, d.db) > store.WALSizeLimit; b++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s after the reader let go: the WAL is %d bytes 30 s later (%d while held; limit %d)",
					then, walSize(t, d.db), held, store.WALSizeLimit)
			}
			if then == "pushing" {
				if status, body := d.push("q", fmt.Sprintf("small-%d-%d", round, b), 10, 1000); status != http.StatusCreated {
					t.Fatalf("push: %d %s", status, body)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s: WAL %d bytes while the reader held it, %d after it let go", then, held, walSize(t, d.db))
	}
	if err := d.stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, d.stderr.String())
	}
	if out, err := runCheck(t, d.db); err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
}
