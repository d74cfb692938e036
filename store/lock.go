package store

import (
	"fmt"
	"os"
)

// lockDB takes the lock that keeps a second process (or a second Open in
// this one) from writing the same database. The lock lives on a file of its
// own beside the database, so it never meets SQLite's own locks on the
// database file, whatever the platform. The file stays after Close: removing
// it would let two processes lock two different files of the same name.
func lockDB(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s", err, path)
	}
	return f, nil
}
