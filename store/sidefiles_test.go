package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/comb-broker/comb/store"
)

// A -wal or -shm path that is not a file (a directory a script made, a
// named pipe) is named for what it is by every open: before, comb serve
// said "attempt to write a readonly database", or took a -wal directory
// beside a new file for a WAL of 4,096 bytes of lost writes, and comb
// check and comb backup "unable to open database file".
func TestASideFileThatIsNotAFileIsNamed(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		side, kind string
		make       func(string) error
	}{
		{"-wal", "directory", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"-shm", "directory", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"-wal", "named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	} {
		t.Run(c.side+" "+c.kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.db")
			want := path + c.side + " is a " + c.kind
			if err := c.make(path + c.side); err != nil {
				t.Fatal(err)
			}
			if st, err := store.Open(ctx, store.Options{Path: path}); err == nil {
				st.Close()
				t.Fatal("opened a new database beside it")
			} else if !strings.Contains(err.Error(), want) {
				t.Errorf("open of a new file: %v, want %q", err, want)
			}
			if err := os.Remove(path + c.side); err != nil {
				t.Fatal(err)
			}
			st := openLogged(t, path, nil)
			pushN(t, st, "a", 3)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			os.Remove(path + c.side)
			if err := c.make(path + c.side); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Check(ctx, path); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("check: %v, want %q", err, want)
			}
			if err := store.BackupFile(ctx, path, filepath.Join(dir, "b.db")); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("backup: %v, want %q", err, want)
			}
			if st, err := store.Open(ctx, store.Options{Path: path}); err == nil {
				st.Close()
				t.Error("opened the database beside it")
			} else if !strings.Contains(err.Error(), want) {
				t.Errorf("open: %v, want %q", err, want)
			}
		})
	}
}
