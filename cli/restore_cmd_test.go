package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

// TestRestoreReplacesACrashedServersFileWithTheBackupWhole is a restore
// after a kill -9, the moment users restore: the old file's -wal is still
// beside it, and a backup copied over the path would have it replayed
// into its pages. comb restore refuses while a server runs and when the
// backup has findings (changing nothing), then puts the backup in place
// with the old database, -wal and -shm moved aside together: the server
// started on it delivers exactly what the backup held, and the old
// database is still whole under its new name.
func TestRestoreReplacesACrashedServersFileWithTheBackupWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server binary; skipped with -short")
	}
	combtest.SQLite3(t)
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	db, backup := filepath.Join(dir, "comb.db"), filepath.Join(dir, "b.db")
	client := crashNewClient()
	srv := crashStartServer(t, bin, db, "first")
	var before []string
	for i := range 50 {
		id := fmt.Sprintf("before-%d", i)
		if neighbourPush(t, client, srv.base, id) {
			before = append(before, id)
		}
	}
	if out, err := neighbourComb(t, bin, []string{"COMB_URL=" + srv.base}, "backup", "--out", backup); err != nil {
		t.Fatalf("comb backup: %v\n%s", err, out)
	}
	for i := range 50 {
		neighbourPush(t, client, srv.base, fmt.Sprintf("after-%d", i))
	}

	out, err := neighbourComb(t, bin, nil, "restore", "--db", db, backup)
	if code := exitCodeOf(err); code != ExitFindings || !strings.Contains(out, "served by a running comb; stop it") {
		t.Fatalf("restore beside a running server: exit %d\n%s", code, out)
	}
	if !neighbourPush(t, client, srv.base, "after-refusal") {
		t.Fatal("the server stopped serving after a refused restore")
	}
	if err := srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
	if fi, err := os.Stat(db + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("after kill -9 the -wal should hold the last commits: %v", err)
	}

	// A backup with findings is refused, the database left as it was.
	bad := filepath.Join(dir, "bad.db")
	if out, err := neighbourComb(t, bin, nil, "backup", "--db", backup, "--out", bad); err != nil {
		t.Fatalf("copy of the backup: %v\n%s", err, out)
	}
	combtest.SQLite3Exec(t, bad, "DELETE FROM partitions")
	out, err = neighbourComb(t, bin, nil, "restore", "--db", db, bad)
	if code := exitCodeOf(err); code != ExitFindings || !strings.Contains(out, "was not changed") {
		t.Fatalf("restore of a backup with findings: exit %d\n%s", code, out)
	}
	if names := dirNames(t, dir); !slices.Contains(names, "comb.db-wal") || slices.ContainsFunc(names, func(n string) bool {
		return strings.Contains(n, "before-restore") || strings.Contains(n, "restoring")
	}) {
		t.Fatalf("files after the refused restore: %v", names)
	}

	out, err = neighbourComb(t, bin, nil, "restore", "--db", db, backup)
	if err != nil || !strings.Contains(out, "restored "+db+" from "+backup) || !strings.Contains(out, " 50 messages, check ok") {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	var aside string
	for _, n := range dirNames(t, dir) {
		if strings.HasPrefix(n, "comb.db.before-restore-") && !strings.HasSuffix(n, "-wal") && !strings.HasSuffix(n, "-shm") {
			aside = filepath.Join(dir, n)
		}
	}
	if aside == "" || !strings.Contains(out, aside) {
		t.Fatalf("the old database is not aside, or not named: %v\n%s", dirNames(t, dir), out)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(db + side); !os.IsNotExist(err) {
			t.Errorf("%s beside the restored file: %v", side, err)
		}
		if _, err := os.Stat(aside + side); err != nil {
			t.Errorf("the old %s did not move with its database: %v", side, err)
		}
	}
	// The old database, with its WAL, is whole under its new name.
	if out, err := neighbourComb(t, bin, nil, "check", "--db", aside); err != nil || !strings.Contains(out, " 101 messages, 0 findings") {
		t.Errorf("check of the old database: %v\n%s", err, out)
	}

	srv = crashStartServer(t, bin, db, "restored")
	got, errs := crashDrain(crashNewClient(), srv.base, "q", "verify", 1, true)
	for _, e := range errs {
		t.Error(e)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.TransactionID)
	}
	slices.Sort(ids)
	slices.Sort(before)
	if !slices.Equal(ids, before) {
		t.Errorf("the restored server delivered %d messages %v, want the backup's %d", len(ids), ids, len(before))
	}
	if err := srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
	if out, err := neighbourComb(t, bin, nil, "check", "--db", db); err != nil {
		t.Errorf("check of the restored file: %v\n%s", err, out)
	}
}

// exitCodeOf is the exit code of a process that ended with err, -1 when
// it did not run.
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}
