package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// RestoreFile onto a path with no database puts the backup there and
// moves nothing; it refuses a path this process serves, and a backup that
// is the database itself, writing nothing.
func TestRestoreFileRefusesAServedPathAndFillsAnEmptyOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, backup := filepath.Join(dir, "src.db"), filepath.Join(dir, "b.db")
	s, err := Open(ctx, Options{Path: src, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	lossPush(t, s, "q", "", "a", "b", "c")
	if err := BackupFile(ctx, src, backup); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreFile(ctx, src, backup, nil); !errors.Is(err, combtype.ErrLocked) {
		t.Fatalf("restore onto a served path = %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreFile(ctx, backup, backup, nil); !errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("restore of a file onto itself = %v, want ErrInvalid", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); n != "src.db" && n != "src.db.reserve" && n != "b.db" && n != "src.db-wal" && n != "src.db-shm" {
			t.Errorf("left behind by the refusals: %s", n)
		}
	}

	fresh := filepath.Join(dir, "new", "comb.db")
	if err := os.Mkdir(filepath.Dir(fresh), 0o700); err != nil {
		t.Fatal(err)
	}
	rep, err := RestoreFile(ctx, fresh, backup, nil)
	if err != nil || rep.Aside != "" || len(rep.Check.Findings) != 0 || rep.Check.Frames != 3 {
		t.Fatalf("restore onto a new path = %+v, %v", rep, err)
	}
	r, err := Open(ctx, Options{Path: fresh, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 10})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("pop of the restored file = %d messages, %v", len(res.Messages), err)
	}
}

// A backup to a name with a -wal (or -shm, -journal) of another database
// left beside it is refused, writing nothing: the next open of the copy
// would read that file as the copy's own.
func TestABackupBesideALeftoverWALIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	s, err := Open(ctx, Options{Path: src, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lossPush(t, s, "q", "", "a")
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		dst := filepath.Join(dir, "b"+side+".db")
		if err := os.WriteFile(dst+side, []byte("left by another database"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Backup(ctx, dst); !errors.Is(err, combtype.ErrInvalid) {
			t.Errorf("backup beside a leftover %s = %v, want ErrInvalid", side, err)
		}
		if _, err := os.Stat(dst); !os.IsNotExist(err) {
			t.Errorf("the refused backup beside %s wrote %s: %v", side, dst, err)
		}
	}
}

// A restore that finds a file of its own aside name already there moves
// nothing: the database, -wal and -shm stay together at the path.
func TestARestoreWhoseAsideNameIsTakenMovesNothing(t *testing.T) {
	ctx := context.Background()
	db, backup := closedWithBackup(t)
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.WriteFile(db+side, []byte("kept with its database"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The name the -shm would move to, for every second the restore
	// might start in.
	now := time.Now().Unix()
	for sec := now; sec < now+5; sec++ {
		if err := os.WriteFile(fmt.Sprintf("%s.before-restore-%d-shm", db, sec), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := RestoreFile(ctx, db, backup, nil); !errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("restore with its aside name taken = %v, want ErrInvalid", err)
	}
	for _, side := range []string{"", "-wal", "-shm"} {
		if _, err := os.Stat(db + side); err != nil {
			t.Errorf("comb.db%s after the refused restore: %v", side, err)
		}
	}
}

// A rollback journal beside the file (a program that set it to
// journal_mode=DELETE crashed mid-write) moves aside with it: left at the
// path, the next open rolled the old file's journal into the backup's
// pages (28 integrity findings in one try), and the file moved aside
// lacked it.
func TestARestoreMovesARollbackJournalAsideWithItsDatabase(t *testing.T) {
	ctx := context.Background()
	db, backup := closedWithBackup(t)
	if err := os.WriteFile(db+"-journal", []byte("the old file's journal"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := RestoreFile(ctx, db, backup, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(db + "-journal"); err == nil {
		t.Error("the old file's journal is still beside the restored file")
	}
	if b, err := os.ReadFile(rep.Aside + "-journal"); err != nil || string(b) != "the old file's journal" {
		t.Errorf("the journal beside the file moved aside: %q, %v", b, err)
	}
}

// A restore stopped (kill -9, a power cut) after it moved the database
// aside and before it put its checked copy in place left nothing at the
// path, and the next start made an empty database there and served it,
// healthy. Open refuses instead, naming the copy; put in place, it is
// served.
func TestAnInterruptedRestoreIsNotServedAsANewDatabase(t *testing.T) {
	ctx := context.Background()
	db, backup := closedWithBackup(t)
	// As the restore leaves them when stopped before its last rename.
	if err := os.Rename(db, db+".before-restore-1796440000"); err != nil {
		t.Fatal(err)
	}
	copyNamed := db + ".restoring-1796440000"
	if err := os.Rename(backup, copyNamed); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(ctx, Options{Path: db}); err == nil {
		s.Close()
		t.Fatal("opened a new database where a restore was stopped")
	} else if !errors.Is(err, combtype.ErrDamaged) || !strings.Contains(err.Error(), "mv "+copyNamed+" "+db) {
		t.Errorf("open: %v, want ErrDamaged naming the copy to put in place", err)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the refused open made a file at the path")
	}
	if err := os.Rename(copyNamed, db); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := len(storedIDs(t, s)); got != 1 {
		t.Errorf("the copy put in place holds %d messages, want the backup's 1", got)
	}
}

// closedWithBackup makes comb.db holding one message, a backup of it
// (b.db) beside it, and closes it; it returns both paths.
func closedWithBackup(t *testing.T) (db, backup string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, backup = filepath.Join(dir, "comb.db"), filepath.Join(dir, "b.db")
	s, err := Open(ctx, Options{Path: db, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	lossPush(t, s, "q", "", "a")
	if err := s.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return db, backup
}
