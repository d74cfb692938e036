//go:build !linux

package store

import "os"

func fallocate(*os.File, int64) error { return errNoFallocate }
