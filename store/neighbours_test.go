package store_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// Tests of comb's file beside the tools users point at it: the sqlite3
// shell, backups and checks, a second server by another name.

func openLogged(t *testing.T, path string, log *slog.Logger) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: path, Logger: log})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return st
}

func pushN(t *testing.T, st *store.Store, prefix string, n int) {
	t.Helper()
	items := make([]combtype.PushItem, n)
	for i := range items {
		items[i] = combtype.PushItem{Queue: "q", TxnID: prefix + strconv.Itoa(i), Payload: []byte(`{"i":1}`)}
	}
	if _, err := st.Push(context.Background(), "", items); err != nil {
		t.Fatalf("push: %v", err)
	}
}

// otherNames are other ways to reach the database file at path: a symlink,
// a hard link and a path through "." and "..".
func otherNames(t *testing.T, path string) map[string]string {
	t.Helper()
	dir := filepath.Dir(path)
	other := t.TempDir()
	names := map[string]string{
		"plain path": path,
		"symlink":    filepath.Join(other, "link.db"),
		"hard link":  filepath.Join(other, "hard.db"), // in another directory
		"dot-dot":    dir + "/./sub/../" + filepath.Base(path),
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, names["symlink"]); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, names["hard link"]); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestWorkOnTheServedFileKeepsAnOutsideSQLiteOffItsWAL does in the serving
// process everything that reads the database file apart from the store's
// own connections (an online backup, a check, an offline-style backup, a
// second Open by every name, all refused), then runs the sqlite3 shell on
// the file as a user would. On POSIX a close of any descriptor of the file
// drops the process's locks, and the shell, finding none, checkpoints and
// deletes the WAL under the server: the WAL and -shm must still be there,
// and an outside reader must see every write made after.
func TestWorkOnTheServedFileKeepsAnOutsideSQLiteOffItsWAL(t *testing.T) {
	combtest.SQLite3(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "comb.db")
	st := openLogged(t, path, nil)
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
		combtest.CheckInvariants(t, path)
	}()
	pushN(t, st, "a", 10)

	if err := st.Backup(ctx, filepath.Join(dir, "online.db")); err != nil {
		t.Fatalf("online backup: %v", err)
	}
	if rep, err := store.Check(ctx, path); err != nil || len(rep.Findings) > 0 || rep.Frames != 10 {
		t.Fatalf("check: %v %+v", err, rep)
	}
	if err := store.BackupFile(ctx, path, filepath.Join(dir, "file.db")); err != nil {
		t.Fatalf("backup of the file: %v", err)
	}
	for name, p := range otherNames(t, path) {
		if second, err := store.Open(ctx, store.Options{Path: p}); !errors.Is(err, combtype.ErrLocked) {
			if err == nil {
				second.Close()
			}
			t.Errorf("second open by %s (%s): %v, want ErrLocked", name, p, err)
		}
	}

	if got := combtest.SQLite3Exec(t, path, "select count(*) from queues"); got != "1" {
		t.Fatalf("sqlite3 counted %q queues", got)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + side); err != nil {
			t.Errorf("after sqlite3 closed: %v", err)
		}
	}
	pushN(t, st, "b", 100)
	if got := combtest.SQLite3Exec(t, path, "select sum(frame_count) from segments"); got != "110" {
		t.Fatalf("an outside reader sees %s messages of the 110 pushed", got)
	}
	// And the next online backup still works.
	if err := st.Backup(ctx, filepath.Join(dir, "online2.db")); err != nil {
		t.Fatalf("second online backup: %v", err)
	}
	if rep, err := store.Check(ctx, filepath.Join(dir, "online2.db")); err != nil || rep.Frames != 110 {
		t.Fatalf("second online backup: %v %+v", err, rep)
	}
}

// TestASecondOpenByAnyNameOfTheFileIsRefused: the lock follows the file,
// not its name, and goes with the Store that held it.
func TestASecondOpenByAnyNameOfTheFileIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	st := openLogged(t, path, nil)
	pushN(t, st, "a", 3)
	names := otherNames(t, path)
	for name, p := range names {
		second, err := store.Open(ctx, store.Options{Path: p})
		if !errors.Is(err, combtype.ErrLocked) {
			if err == nil {
				second.Close()
			}
			t.Errorf("second open by %s (%s): %v, want ErrLocked", name, p, err)
		}
	}
	pushN(t, st, "b", 3) // the first is unharmed
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for name, p := range names {
		st, err := store.Open(ctx, store.Options{Path: p})
		if err != nil {
			t.Fatalf("open by %s after the first closed: %v", name, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	combtest.CheckInvariants(t, path)
}

// TestCheckAndBackupRefuseAServedFileWhoseWALIsGone: with its -wal and -shm removed
// from the directory under a running server, the file lacks the server's
// recent writes, and a check or copy of it must not say it is fine.
func TestCheckAndBackupRefuseAServedFileWhoseWALIsGone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "comb.db")
	st := openLogged(t, path, nil)
	pushN(t, st, "a", 10)
	// The first ten reach the file itself, the next only the WAL.
	combtest.SQLite3Exec(t, path, "PRAGMA wal_checkpoint")
	pushN(t, st, "b", 10)
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + side); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := store.Check(ctx, path); !errors.Is(err, combtype.ErrStale) {
		t.Errorf("check of the stale file: %v %+v, want ErrStale", err, rep)
	}
	if err := store.BackupFile(ctx, path, filepath.Join(dir, "copy.db")); !errors.Is(err, combtype.ErrStale) {
		t.Errorf("backup of the stale file: %v, want ErrStale", err)
	}
	if err := st.Backup(ctx, filepath.Join(dir, "online.db")); !errors.Is(err, combtype.ErrStale) {
		t.Errorf("online backup with the WAL gone: %v, want ErrStale", err)
	}
	// A clean close writes the WAL it still holds into the file.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := store.Check(ctx, path)
	if err != nil || len(rep.Findings) > 0 || rep.Frames != 20 {
		t.Fatalf("check after the close: %v %+v", err, rep)
	}
}

// TestCloseBesideAnOutsideReaderDoesNotWaitForIt: a sqlite3 session holding
// a read transaction keeps the closing checkpoint from truncating the WAL;
// Close leaves the WAL for the next open, says so in one line, and loses
// nothing.
func TestCloseBesideAnOutsideReaderDoesNotWaitForIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	var logBuf bytes.Buffer
	st := openLogged(t, path, slog.New(slog.NewTextHandler(&logBuf, nil)))
	pushN(t, st, "a", 10)
	reader := combtest.StartSQLite3Reader(t, path)
	pushN(t, st, "b", 10)
	start := time.Now()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("Close with a reader in a transaction took %v", took)
	if took > 5*time.Second {
		t.Errorf("Close waited %v for an outside reader", took)
	}
	if n := strings.Count(logBuf.String(), "the WAL is left for the next start"); n != 1 {
		t.Errorf("%d log lines about the WAL left, want 1:\n%s", n, logBuf.String())
	}
	reader.Close()
	st = openLogged(t, path, nil)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := store.Check(context.Background(), path)
	if err != nil || len(rep.Findings) > 0 || rep.Frames != 20 {
		t.Fatalf("check after the reopen: %v %+v", err, rep)
	}
}

// TestCheckReportsADamagedPageAsFindings: bytes of a page of the file
// overwritten (a bad sector, a copy cut short, a tool writing where it
// should not) make SQLite stop the statements that read it. comb check
// must say what SQLite found and which of its checks could not finish, as
// findings (exit 1), and still run the others. Before, the first stopped
// statement ended the check with an error and nothing it had found.
func TestCheckReportsADamagedPageAsFindings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	st := openLogged(t, path, nil)
	for i := range 20 {
		pushN(t, st, "b"+strconv.Itoa(i)+"-", 100)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The dedup keys' tree holds 2,000 keys: its root is an interior page.
	combtest.DamagePage(t, path, "txids")

	rep, err := store.Check(context.Background(), path)
	if err != nil {
		t.Fatalf("check of a damaged page: %v, want findings", err)
	}
	var integrity, stopped int
	for _, f := range rep.Findings {
		t.Logf("%s: %s", f.Check, f.Detail)
		if f.Check == "integrity" {
			integrity++
		}
		if strings.Contains(f.Detail, "SQLite stopped reading") {
			stopped++
		}
	}
	if integrity == 0 || stopped == 0 {
		t.Errorf("findings %+v: want SQLite's integrity lines and the checks it stopped", rep.Findings)
	}
}

// TestPlannerStatisticsAnotherProgramWroteAreDropped: ANALYZE run by a
// sqlite3 session writes sqlite_stat1, which moves comb's plans away from
// the ones they were measured with (planstats.go); taken on a small file,
// it made listings many times slower once the file grew. The running
// writer drops the table within a look or two, idle or not, and an open
// drops what was written while the server was down.
func TestPlannerStatisticsAnotherProgramWroteAreDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	var logs combtest.Logs
	st := openLogged(t, path, logs.Logger())
	pushN(t, st, "a", 10)
	statTables := func() string {
		return combtest.SQLite3Exec(t, path,
			"SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sqlite_stat%'")
	}
	combtest.SQLite3Exec(t, path, "ANALYZE")
	if n := statTables(); n == "0" {
		t.Fatal("ANALYZE wrote no statistics table; the test proves nothing")
	}
	// The writer looks once a second; ten times that is a stall, not a
	// slow machine.
	for deadline := time.Now().Add(10 * time.Second); statTables() != "0"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sqlite_stat1 still there 10 s after ANALYZE; log:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "dropped the planner statistics") {
		t.Errorf("no log line says the statistics were dropped:\n%s", logs.String())
	}
	pushN(t, st, "b", 10)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Written while nothing serves the file: gone once it opens.
	combtest.SQLite3Exec(t, path, "ANALYZE")
	st = openLogged(t, path, nil)
	if n := statTables(); n != "0" {
		t.Errorf("%s statistics tables after the open", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := store.Check(context.Background(), path)
	if err != nil || len(rep.Findings) > 0 {
		t.Fatalf("check: %v %+v", err, rep)
	}
}

// TestAutoVacuumSwitchedOffByAnotherProgramIsLogged: a VACUUM another
// program runs can switch the file's auto_vacuum off, beside a running
// server or not; retention and a full disk's recovery then cannot give
// pages back to the file system (vacuum.go). The writer says so once,
// with the way back, whether it finds it at open or while it runs.
func TestAutoVacuumSwitchedOffByAnotherProgramIsLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	const warning = "does not give freed pages back to the file system"
	var logs combtest.Logs
	st := openLogged(t, path, logs.Logger())
	pushN(t, st, "a", 10)
	combtest.SQLite3Exec(t, path, "PRAGMA busy_timeout = 10000; PRAGMA auto_vacuum = NONE; VACUUM;")
	if got := combtest.SQLite3Exec(t, path, "PRAGMA auto_vacuum"); got != "0" {
		t.Fatalf("auto_vacuum after the outside VACUUM = %s, want 0; the test proves nothing", got)
	}
	// The writer looks once a second; ten times that is a stall.
	combtest.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), warning) {
			return errors.New("no warning yet")
		}
		return nil
	})
	pushN(t, st, "b", 10)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}

	var again combtest.Logs
	st = openLogged(t, path, again.Logger())
	if !strings.Contains(again.String(), warning) || !strings.Contains(again.String(), "auto_vacuum=INCREMENTAL; VACUUM") {
		t.Errorf("no warning with the way back at open:\n%s", again.String())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// The way back the warning gives, then a quiet open.
	combtest.SQLite3Exec(t, path, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
	var fixed combtest.Logs
	st = openLogged(t, path, fixed.Logger())
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fixed.String(), warning) {
		t.Errorf("warning after the file was made INCREMENTAL again:\n%s", fixed.String())
	}
	rep, err := store.Check(context.Background(), path)
	if err != nil || len(rep.Findings) > 0 || rep.Frames != 20 {
		t.Fatalf("check: %v %+v", err, rep)
	}
}

// TestCheckpointsOfAnotherProgramAreNotTakenForAnOverwrite: the writer
// reads the file's header after every commit to notice a backup copied
// over the file in place (replaced.go). Another program's checkpoints
// (litestream makes them, so does a sqlite3 session) write the header
// too, as SQLite does, and must never be taken for one: the server would
// stop and set its WAL aside.
func TestCheckpointsOfAnotherProgramAreNotTakenForAnOverwrite(t *testing.T) {
	combtest.SQLite3(t)
	path := filepath.Join(t.TempDir(), "comb.db")
	st := openLogged(t, path, nil)
	defer st.Close()
	head := func() string {
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 100 {
			t.Fatalf("read the header: %v", err)
		}
		return string(b[24:28])
	}
	first := head()
	for round := range 30 {
		// Enough for the queue's pages, and page 1 with them, to grow.
		for i := range 5 {
			pushN(t, st, strconv.Itoa(round)+"-"+strconv.Itoa(i)+"-", 200)
		}
		combtest.SQLite3Exec(t, path, ".timeout 5000\nPRAGMA wal_checkpoint(TRUNCATE);")
		select {
		case <-st.Replaced():
			t.Fatalf("round %d: a checkpoint of another program was taken for an overwrite", round)
		default:
		}
	}
	if head() == first {
		t.Fatalf("the file's change counter never moved: the test wrote no header")
	}
	if got := combtest.SQLite3Exec(t, path, "select sum(frame_count) from segments"); got != "30000" {
		t.Fatalf("an outside reader sees %s messages of the 30000 pushed", got)
	}
}

// The forwarders table is not STRICT, so a value set there by hand may
// be of any type. A row edited so is read as SQLite casts it, so that it
// neither fails every listing nor keeps comb serve from starting (batch
// = 'abc' did both: "converting driver.Value type string to a int").
func TestAForwarderRowEditedByHandIsStillRead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	st := openLogged(t, path, nil)
	defer st.Close()
	f := &combtype.Forwarder{Name: "up", Direction: "push", Queue: "q", UpstreamURL: "http://127.0.0.1:1", Group: "g", Batch: 10}
	if err := st.PutForwarder(ctx, f, false); err != nil {
		t.Fatal(err)
	}
	combtest.SQLite3Exec(t, path, `PRAGMA busy_timeout = 10000; UPDATE forwarders SET batch = 'abc', paused = 'yes', evicted = x'00ff', created_at = 'then'`)
	all, err := st.Forwarders(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("listing after the edit: %v, %v", all, err)
	}
	one, err := st.Forwarder(ctx, "", "up")
	if err != nil {
		t.Fatalf("reading it after the edit: %v", err)
	}
	if one.Name != "up" || one.Batch != 0 || one.Queue != "q" {
		t.Errorf("read as %+v, want its name and queue, and batch 'abc' as SQLite casts it (0, the default)", one)
	}
}

// Another program changes the schema: an index dropped made every
// statement planned with it fail ("no such index": pops, listings and the
// status answered 500 while pushes were answered 201), a trigger added
// runs inside comb's writes and can fail them, a column dropped fails
// every statement that names it. comb check found such a file clean.
// Now check names each change, and Open makes a dropped index again and
// refuses what it cannot put back.
func TestASchemaChangedByAnotherProgramIsFoundAndMended(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	st := openLogged(t, path, nil)
	pushN(t, st, "a", 5)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	findings := func() []string {
		t.Helper()
		rep, err := store.Check(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range rep.Findings {
			out = append(out, f.Check+": "+f.Detail)
		}
		return out
	}
	if f := findings(); len(f) != 0 {
		t.Fatalf("findings before any change: %v", f)
	}

	combtest.SQLite3Exec(t, path, "DROP INDEX segments_partition_offset")
	if f := findings(); len(f) != 1 || !strings.Contains(f[0], "schema: index segments_partition_offset is missing") {
		t.Errorf("check after DROP INDEX: %v, want the index named", f)
	}
	var logs strings.Builder
	st = openLogged(t, path, slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(logs.String(), "made again") || !strings.Contains(logs.String(), "segments_partition_offset") {
		t.Errorf("open said nothing of the index it made again:\n%s", logs.String())
	}
	if msgs, _, err := st.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 10}); err != nil || len(msgs) != 5 {
		t.Errorf("listing after the index was made again: %d messages, %v", len(msgs), err)
	}
	pushN(t, st, "b", 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if f := findings(); len(f) != 0 {
		t.Errorf("findings once the index was made again: %v", f)
	}

	for _, c := range []struct{ change, undo, want string }{
		{"CREATE TRIGGER audit BEFORE INSERT ON segments BEGIN SELECT RAISE(FAIL, 'no'); END", "DROP TRIGGER audit",
			"trigger audit on segments is not comb's"},
		{"ALTER TABLE partitions DROP COLUMN max_txn_key", "ALTER TABLE partitions ADD COLUMN max_txn_key INTEGER",
			"table partitions has no column max_txn_key"},
	} {
		combtest.SQLite3Exec(t, path, c.change)
		if f := findings(); len(f) != 1 || !strings.Contains(f[0], c.want) {
			t.Errorf("check after %q: %v, want %q", c.change, f, c.want)
		}
		s, err := store.Open(ctx, store.Options{Path: path})
		if err == nil {
			s.Close()
			t.Errorf("opened the file after %q", c.change)
		} else if !errors.Is(err, combtype.ErrDamaged) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("open after %q: %v, want ErrDamaged naming %q", c.change, err, c.want)
		}
		combtest.SQLite3Exec(t, path, c.undo)
	}
	st = openLogged(t, path, nil)
	pushN(t, st, "c", 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	combtest.CheckInvariants(t, path)
}

// A file another program holds exclusively when the store opens it is
// refused as busy, what it is, not as "not a comb database".
func TestAnOpenBesideAnExclusiveSessionSaysTheFileIsBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	st := openLogged(t, path, nil)
	pushN(t, st, "a", 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	combtest.StartSQLite3Exclusive(t, path)
	s, err := store.Open(ctx, store.Options{Path: path, BusyTimeout: 100 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("opened a file another program holds exclusively")
	}
	if !errors.Is(err, combtype.ErrFileBusy) || errors.Is(err, combtype.ErrNotComb) {
		t.Errorf("open beside an exclusive session: %v, want ErrFileBusy and not ErrNotComb", err)
	}
}

// A database served, backed up, checked and restored by a symlink to it
// (a data directory linked into place, a /var/lib path pointing at a
// mount): SQLite keeps the -wal and -shm beside the file the link leads
// to, and every command finds them there. Before, the online backup and
// comb backup --db and comb check --db took the file for one whose -wal
// was gone ("stale"), the WAL's size read 0, and a restore moved the link
// aside and put a plain file in its place.
func TestAServedSymlinkIsTheFileItLeadsTo(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "comb.db")
	if err := os.Mkdir(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "comb.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	st := openLogged(t, link, nil)
	pushN(t, st, "a", 10)
	if _, wal, err := st.DatabaseSize(); err != nil || wal == 0 {
		t.Errorf("the WAL's size: %d, %v; want the size of the -wal beside %s", wal, err, real)
	}
	if err := st.Backup(ctx, filepath.Join(dir, "online.db")); err != nil {
		t.Errorf("online backup: %v", err)
	}
	if err := store.BackupFile(ctx, link, filepath.Join(dir, "file.db")); err != nil {
		t.Errorf("backup of the served file by its link: %v", err)
	}
	if rep, err := store.Check(ctx, link); err != nil || len(rep.Findings) > 0 || rep.Frames != 10 {
		t.Errorf("check of the served file by its link: %+v, %v", rep, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// A backup with more in it, restored by the link.
	other := filepath.Join(dir, "other.db")
	o := openLogged(t, other, nil)
	pushN(t, o, "b", 12)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := store.RestoreFile(ctx, link, other, nil)
	if err != nil || len(rep.Check.Findings) > 0 {
		t.Fatalf("restore by the link: %+v, %v", rep, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("after the restore the link is %v, %v; want the symlink", fi, err)
	}
	if !strings.HasPrefix(rep.Aside, real) {
		t.Errorf("the old file moved aside to %s, want beside %s", rep.Aside, real)
	}
	if chk, err := store.Check(ctx, real); err != nil || chk.Frames != 12 {
		t.Errorf("the file the link leads to after the restore: %+v, %v; want the backup's 12", chk, err)
	}
}

// A damaged page only the online backup reads (a segment's overflow page
// no pop has read since the start) fails the backup as damaged, and
// Health says so from then on, as it does once a pop meets damage.
// Before, the backup answered 500 "damaged" while /health stayed 200.
func TestABackupThatMeetsDamageTurnsHealthDamaged(t *testing.T) {
	sqlite3 := combtest.SQLite3(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "comb.db")
	st := openLogged(t, path, nil)
	big := make([]byte, 30000) // what lz4 cannot shrink
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range big {
		big[i] = "0123456789abcdef"[rnd.IntN(16)]
	}
	for range 3 {
		if _, err := st.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`"` + string(big) + `"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil { // the pages into the file
		t.Fatal(err)
	}
	out, err := exec.Command(sqlite3, path, "SELECT pageno FROM dbstat WHERE name = 'segments' AND pagetype = 'overflow' LIMIT 1").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("an overflow page of segments: %q, %v", out, err)
	}
	page, _ := strconv.Atoi(string(bytes.TrimSpace(out)))
	st = openLogged(t, path, nil)
	defer st.Close()
	if err := st.Health(ctx); err != nil {
		t.Fatal(err)
	}
	// Its next-page pointer made one past any page, by another process:
	// this one must not open and close the file it serves.
	dd := exec.Command("dd", "of="+path, "bs=1", "seek="+strconv.Itoa((page-1)*4096), "count=4", "conv=notrunc")
	dd.Stdin = bytes.NewReader([]byte{0x7f, 0xff, 0xff, 0xff})
	if out, err := dd.CombinedOutput(); err != nil {
		t.Fatalf("dd: %v %s", err, out)
	}
	if err := st.Backup(ctx, filepath.Join(dir, "b.db")); !errors.Is(err, combtype.ErrDamaged) {
		t.Fatalf("backup: %v, want ErrDamaged", err)
	}
	if err := st.Health(ctx); !errors.Is(err, combtype.ErrDamaged) {
		t.Errorf("health after the backup met damage: %v, want ErrDamaged", err)
	}
}
