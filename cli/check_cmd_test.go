package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// makeDB writes a database holding queue "orders", partition "p1", with
// three pushes of five messages (segments at offsets 0, 5 and 10) and a
// consumer group that has completed the first batch. It is closed on return.
func makeDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "comb.db")
	ctx := context.Background()
	b, err := broker.Open(ctx, broker.Options{Path: path, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	for s := range 3 {
		items := make([]combtype.PushItem, 5)
		for i := range items {
			items[i] = combtype.PushItem{Queue: "orders", Partition: "p1", TxnID: fmt.Sprintf("m%d", s*5+i),
				Payload: []byte(fmt.Sprintf(`{"n":%d}`, s*5+i))}
		}
		if _, err := b.Push(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "orders", Group: "billing", Batch: 5})
	if err != nil || len(res.Messages) != 5 {
		t.Fatalf("pop: %v %+v", err, res)
	}
	last := res.Messages[len(res.Messages)-1]
	if _, err := b.Ack(ctx, []combtype.AckItem{{TxnID: last.TxnID, PartitionID: last.PartitionID,
		LeaseID: last.LeaseID, Status: "completed", Group: "billing"}}); err != nil {
		t.Fatal(err)
	}
	b.Drain()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// tamper runs statements on a closed database file, as a disk fault or a
// stray tool would.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func runCheck(t *testing.T, path string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := &App{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	err := m.Run(context.Background(), []string{"check", "--db", path})
	return out.String(), err
}

func TestCheckPassesAHealthyDatabaseAndNamesACorruptSegment(t *testing.T) {
	path := makeDB(t)
	out, err := runCheck(t, path)
	if err != nil || !strings.Contains(out, "1 queues, 1 partitions, 3 segments, 15 messages, 0 findings") {
		t.Fatalf("check of a healthy file: %v\n%s", err, out)
	}

	// Same length, different bytes: only the checksum can tell.
	tamper(t, path, `UPDATE segments SET data = zeroblob(length(data)) WHERE base_offset = 5`)
	out, err = runCheck(t, path)
	if err == nil || !strings.Contains(err.Error(), "1 findings") {
		t.Fatalf("check of a corrupt segment: err %v\n%s", err, out)
	}
	if !strings.Contains(out, "checksum: queue orders partition p1 offsets 5-9: segment corrupt") {
		t.Fatalf("finding does not name the segment:\n%s", out)
	}
}

func TestCheckFindsGapsCursorsPastTheEndAndOrphanRows(t *testing.T) {
	path := makeDB(t)
	tamper(t, path,
		`DELETE FROM segments WHERE base_offset = 5`,
		`UPDATE cursors SET committed = 40`,
		`INSERT INTO txids (partition_id, txn_key, offset) VALUES (999, 1, 0)`,
		`INSERT INTO cursors (partition_id, group_name, committed, created_at) VALUES (998, 'ghost', 3, 0)`)
	out, err := runCheck(t, path)
	if err == nil {
		t.Fatalf("check passed a broken file:\n%s", out)
	}
	for _, want := range []string{
		"tiling: queue orders partition p1 offsets 5-9: gap",
		"bounds: queue orders partition p1 offset 40: cursor of group 'billing' outside [-1, last_offset 14]",
		"orphan: 1 dedup keys of partition id 999, which does not exist",
		"orphan: offset 3: cursor of group 'ghost' on partition id 998, which does not exist",
		"4 findings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestCheckRefusesAMissingOrForeignFileWithoutTouchingIt(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := runCheck(t, missing); err == nil {
		t.Fatal("check of a missing file passed")
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("check created %s: %v", missing, err)
	}
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not a database at all"), 0o600)
	if _, err := runCheck(t, text); err == nil || !strings.Contains(err.Error(), "not a comb database") {
		t.Fatalf("check of a text file: %v", err)
	}
}

// fileBytes is the content of path, or nil when it does not exist.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// TestServeRefusesForeignNewerAndLockedFiles runs the real binary: each
// refusal is one line on stderr, exit code 1, and the file is unchanged.
func TestServeRefusesForeignNewerAndLockedFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the comb binary; skipped with -short")
	}
	bin := crashBuildBinary(t)
	dir := t.TempDir()

	foreign := filepath.Join(dir, "app.db")
	tamper(t, foreign, `CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT)`, `INSERT INTO contacts (name) VALUES ('ada')`)
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("SQLite is not in this file\n"), 0o600)
	newer := makeDB(t)
	tamper(t, newer, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (999, 1)`)

	cases := []struct {
		name, path, want string
		wal              bool // comb's own files are in WAL mode: a reader leaves its -shm
	}{
		{"a SQLite file of another program", foreign, "holds tables but no comb schema", false},
		{"a file that is not SQLite", text, "is not a SQLite database", false},
		{"a newer schema", newer, "has schema version 999, this comb knows up to", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := fileBytes(t, c.path)
			cmd := exec.Command(bin, "serve", "--addr", crashFreeAddr(t), "--db", c.path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			exit, ok := err.(*exec.ExitError)
			if !ok || exit.ExitCode() != 1 {
				t.Fatalf("serve exited %v, want code 1; stderr:\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "comb: ") || !strings.Contains(lines[0], c.want) {
				t.Fatalf("stderr is not one line naming %q:\n%s", c.want, stderr.String())
			}
			if !bytes.Equal(before, fileBytes(t, c.path)) {
				t.Fatal("the refused file changed")
			}
			for _, side := range []string{"-wal", "-shm", ".lock"} {
				if c.wal {
					continue // comb's own file: its reader leaves -shm, an earlier server its .lock
				}
				if _, err := os.Stat(c.path + side); err == nil {
					t.Errorf("refusal left %s%s behind", c.path, side)
				}
			}
		})
	}

	t.Run("a second server on the same file", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "comb.db")
		first := crashStartServer(t, bin, db, "first")
		cmd := exec.Command(bin, "serve", "--addr", crashFreeAddr(t), "--db", db)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
			t.Fatalf("second serve exited %v, want code 1; stderr:\n%s", err, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, "comb: ") || !strings.Contains(last, "in use by another comb process") {
			t.Fatalf("second serve stderr:\n%s", stderr.String())
		}
		// The first server is unharmed.
		resp, err := crashNewClient().Get(first.base + "/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("first server after the refusal: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

func TestCheckFindsOverlapsMissingTailsAndTimeGoingBack(t *testing.T) {
	path := makeDB(t)
	tamper(t, path,
		`UPDATE segments SET base_offset = 8, created_at = 0 WHERE base_offset = 10`,
		`INSERT INTO tombstones (partition_id, offset, created_at) SELECT id, 20, 0 FROM partitions`)
	out, err := runCheck(t, path)
	if err == nil {
		t.Fatalf("check passed a broken file:\n%s", out)
	}
	for _, want := range []string{
		"tiling: queue orders partition p1 offsets 8-9: overlap: segment at 8 starts before 10",
		"created_at: queue orders partition p1 offsets 8-12: created_at 0 is before",
		"tiling: queue orders partition p1 offsets 13-14: missing: last_offset is 14 but the segments end at 12",
		"bounds: queue orders partition p1 offset 20: tombstone past last_offset 14",
		"4 findings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// A sqlite3 session that set the file to journal_mode=DELETE and was
// killed in the middle of a write leaves a hot rollback journal. check
// and backup --db said "attempt to write a readonly database", which sent
// people to the file's permissions; they now name the journal and what
// rolls it back, and serve does roll it back.
func TestCheckAndBackupNameAHotJournal(t *testing.T) {
	sqlite3 := combtest.SQLite3(t)
	path := makeDB(t)
	// The session kills itself (.system runs a shell whose parent it is)
	// with its transaction's pages spilled into the file.
	script := "PRAGMA journal_mode=DELETE;\nPRAGMA cache_size=1;\nBEGIN IMMEDIATE;\nCREATE TABLE junk(x);\n" +
		strings.Repeat("INSERT INTO junk VALUES (zeroblob(8000));\n", 60) +
		"UPDATE segments SET data = zeroblob(length(data));\n.system kill -9 $PPID\n"
	cmd := exec.Command(sqlite3, path)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the sqlite3 session was not killed: %s", out)
	}
	if fi, err := os.Stat(path + "-journal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no hot journal: %v", err)
	}

	_, err := runCheck(t, path)
	if err == nil || !strings.Contains(err.Error(), path+"-journal is a rollback journal") ||
		!strings.Contains(err.Error(), "start comb serve on the file once") {
		t.Fatalf("check beside a hot journal: %v", err)
	}
	var out, errOut bytes.Buffer
	m := &App{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	err = m.Run(context.Background(), []string{"backup", "--db", path, "--out", filepath.Join(t.TempDir(), "copy.db")})
	if err == nil || !strings.Contains(err.Error(), path+"-journal is a rollback journal") {
		t.Fatalf("backup --db beside a hot journal: %v", err)
	}

	// What the error says to do: open it for writing once.
	b, err := broker.Open(context.Background(), broker.Options{Path: path, RetentionInterval: -1})
	if err != nil {
		t.Fatalf("open beside a hot journal: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := runCheck(t, path); err != nil || !strings.Contains(out, "15 messages, 0 findings") {
		t.Fatalf("check once rolled back: %v\n%s", err, out)
	}
}
