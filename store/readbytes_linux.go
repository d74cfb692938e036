package store

import (
	"bytes"
	"os"
	"strconv"
)

// readBytes is the bytes this process has read through read system calls
// so far (rchar of /proc/self/io), whether from the disk or the page cache.
func readBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("rchar:")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
