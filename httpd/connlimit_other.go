//go:build !unix

package httpd

// openFileLimit: no per-process descriptor limit to keep under here.
func openFileLimit() (int64, bool) { return 0, false }
