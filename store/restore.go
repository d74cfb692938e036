package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// RestoreFile puts a copy of the database backup at path, for a server to
// start on, the way docs/operations.md's restore asks for by hand: the
// copy is made through SQLite (so a backup with a -wal of its own is
// copied whole) beside path, verified as Check does, and renamed in only
// when it is sound; the database that was at path moves aside together
// with its -wal and -shm, as one database under a new name, so that no
// WAL of the old file is ever replayed into the backup. Starting on a
// backup next to an old -wal did just that: SQLite, which cannot tell
// whose WAL it is, applied the old file's last commits to the backup's
// pages (12 findings in one try).
//
// A comb serving path, in this process or another, is refused with
// combtype.ErrLocked, before anything is written; so is a path that one
// starts serving meanwhile, up to the rename. fn, when not nil, hears how
// far the copy and its check have come.
func RestoreFile(ctx context.Context, path, backup string, fn func(combtype.Progress)) (*combtype.RestoreReport, error) {
	// A path that is a symlink keeps leading to the database: the file it
	// leads to is the one replaced, its -wal and -shm beside it.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if served, err := servedBy(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("restore: %w", err)
	} else if served {
		return nil, fmt.Errorf("restore: %w: %s is served by a running comb; stop it (SIGTERM) first", combtype.ErrLocked, path)
	}
	if same, err := sameFile(path, backup); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	} else if same {
		return nil, fmt.Errorf("restore: %w: %s is the database itself", combtype.ErrInvalid, backup)
	}
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	tmp := path + ".restoring-" + stamp
	if fn == nil {
		fn = func(combtype.Progress) {}
	}
	if err := BackupFileProgress(ctx, backup, tmp, func(p combtype.Progress) { fn(p) }); err != nil {
		return nil, fmt.Errorf("restore: copy %s: %w", backup, err)
	}
	placed := false
	defer func() {
		if !placed {
			os.Remove(tmp)
		}
	}()
	rep, err := CheckProgress(ctx, tmp, func(p combtype.Progress) {
		p.Phase = "check " + p.Phase
		fn(p)
	})
	if err != nil {
		return nil, fmt.Errorf("restore: check the copy of %s: %w", backup, err)
	}
	out := &combtype.RestoreReport{Check: rep}
	if len(rep.Findings) > 0 {
		return out, nil
	}
	info, err := os.Stat(tmp)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	out.Bytes = info.Size()

	// The lock keeps a server off the file from here to the rename; it is
	// taken only on a file that exists (lockDB would make one).
	if old, err := os.Stat(path); err == nil {
		// The service's user must open the new file as it did the old.
		if err := takeOwner(tmp, old); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		l, err := lockDB(path)
		if err != nil {
			return nil, fmt.Errorf("restore: %w (stop the server first)", err)
		}
		// Nothing of this process opened the file through SQLite, so
		// closing the lock's descriptor drops no lock of a connection.
		defer l.release()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("restore: %w", err)
	}
	aside := path + ".before-restore-" + stamp
	var sides []string
	// A -journal is a rollback journal a program that set the file to
	// journal_mode=DELETE left hot when it crashed: left at the path, the
	// next open rolls it into the backup's pages.
	for _, side := range []string{"", "-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(path + side); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		// All looked at before any moves: a database half moved aside
		// would be no database at either name.
		if _, err := os.Lstat(aside + side); err == nil {
			return nil, fmt.Errorf("restore: %w: %s already exists", combtype.ErrInvalid, aside+side)
		}
		sides = append(sides, side)
	}
	for _, side := range sides {
		if err := os.Rename(path+side, aside+side); err != nil {
			return nil, fmt.Errorf("restore: move %s aside: %w", path+side, err)
		}
	}
	moved := len(sides) > 0
	if moved {
		out.Aside = aside
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("restore: put the copy at %s: %w (the old database is %s)", path, err, aside)
	}
	placed = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return out, nil
}

// missingDatabase refuses to make a new database at a path where one is
// missing: when a restore was stopped (a kill, a power cut) between
// moving the database aside and putting the checked copy,
// path.restoring-TIME, in its place (Open would have made an empty
// database there and served it, healthy, and with a -wal left at the
// path, advised removing it), or when a WAL with frames is left there.
func missingDatabase(path string) error {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	var last string // the newest copy: the names sort by time
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), filepath.Base(path)+".restoring-") {
			last = filepath.Join(filepath.Dir(path), e.Name())
		}
	}
	if last == "" {
		// Moved or removed while its server ran, then a kill -9: the WAL
		// left at the path holds its last writes. Refused here, before
		// the lock makes an empty file at the path, which was left
		// behind the refusal (checkHeader) and read as a database.
		if fi, err := os.Stat(walPath(path)); err == nil && fi.Mode().IsRegular() && fi.Size() > walHeaderSize {
			return fmt.Errorf("%w: %s does not exist, but the WAL beside it holds %d bytes of a database's last writes: "+
				"the file was moved or removed while its WAL was left; put it back, or restore it from a backup "+
				"(docs/operations.md), or remove %s to start an empty database",
				combtype.ErrDamaged, path, fi.Size(), walPath(path))
		}
		return nil
	}
	return fmt.Errorf("%w: %s is missing and %s is the checked copy of a comb restore stopped before it put the copy in place "+
		"(the database it replaced is %s.before-restore-TIME): run the restore again, or put the copy in place with mv %s %s",
		combtype.ErrDamaged, path, last, path, last, path)
}

// sameFile reports whether a and b name one file; a missing one is not
// the other.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// syncDir makes the renames in dir durable. Windows cannot sync a
// directory, and its renames need not.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
