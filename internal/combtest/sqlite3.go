package combtest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// SQLite3 is the path of the sqlite3 command-line shell (Debian package
// sqlite3), the tool users point at comb's file. A test that needs it is
// skipped where it is missing, and fails instead under CI=true.
func SQLite3(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("sqlite3 is not installed (Debian package sqlite3): %v", err)
		}
		tb.Skipf("sqlite3 is not installed: %v", err)
	}
	return path
}

// SQLite3Exec runs one sqlite3 session on the database at path, as a user
// would (sqlite3 comb.db 'select ...'), and returns its output.
func SQLite3Exec(tb testing.TB, path, sql string) string {
	tb.Helper()
	out, err := exec.Command(SQLite3(tb), path, sql).CombinedOutput()
	if err != nil {
		tb.Fatalf("sqlite3 %s %q: %v\n%s", path, sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

// SQLite3Session is a sqlite3 session holding a transaction on a
// database: a read one, as litestream or a user's open shell holds, or a
// write one, as a DB browser editing a table holds.
type SQLite3Session struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// StartSQLite3Reader starts sqlite3 on path, begins a transaction and reads
// in it, and returns once the read has answered, so the session holds its
// snapshot until Close. It is closed at cleanup too.
func StartSQLite3Reader(tb testing.TB, path string) *SQLite3Session {
	tb.Helper()
	return startSQLite3(tb, path, "BEGIN")
}

// StartSQLite3Writer starts sqlite3 on path and begins a write transaction
// (BEGIN IMMEDIATE), and returns once it holds the file's write lock,
// which it keeps until Close ends the session and the transaction with it,
// nothing written. It is closed at cleanup too.
func StartSQLite3Writer(tb testing.TB, path string) *SQLite3Session {
	tb.Helper()
	return startSQLite3(tb, path, "BEGIN IMMEDIATE")
}

// StartSQLite3Exclusive starts sqlite3 on path in exclusive locking mode
// and begins an exclusive transaction, and returns once it holds the file
// so that no other connection can read it either. It is closed at cleanup
// too.
func StartSQLite3Exclusive(tb testing.TB, path string) *SQLite3Session {
	tb.Helper()
	return startSQLite3(tb, path, ".output /dev/null\nPRAGMA locking_mode=EXCLUSIVE;\n.output stdout\nBEGIN EXCLUSIVE")
}

// startSQLite3 starts a session that runs begin and then reads.
func startSQLite3(tb testing.TB, path, begin string) *SQLite3Session {
	tb.Helper()
	cmd := exec.Command(SQLite3(tb), path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start sqlite3: %v", err)
	}
	r := &SQLite3Session{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	tb.Cleanup(r.Close)
	lines := make(chan string, 16)
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
	}()
	// Waiting as a user's shell would not, for a commit of comb's to end.
	io.WriteString(stdin, ".timeout 10000\n"+begin+"; SELECT 'reading', count(*) FROM sqlite_schema;\n")
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "reading|") {
			tb.Fatalf("sqlite3 %s: %s", begin, line)
		}
	case <-r.done:
		tb.Fatalf("sqlite3 %s: exited before reading", begin)
	case <-time.After(30 * time.Second):
		tb.Fatalf("sqlite3 %s: no answer in 30 s", begin)
	}
	return r
}

// Close ends the session's transaction and the session.
func (r *SQLite3Session) Close() {
	r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
}

// DamagePage overwrites the cells of the root page of the table or index
// name in the closed database at path, as a bad sector or a program
// writing into the file would: SQLite then stops, "database disk image is
// malformed", every statement that reads through that page. The root must
// be an interior page (a tree of more than one page), whose damage no
// statement reading the tree can miss.
func DamagePage(tb testing.TB, path, name string) {
	tb.Helper()
	page := readPage(tb, path, `SELECT rootpage FROM sqlite_schema WHERE name = ?`, name)
	if page.b[0] != 0x02 && page.b[0] != 0x05 { // interior index, interior table
		tb.Fatalf("the root page of %s is a leaf (type %#x): the tree is too small to damage", name, page.b[0])
	}
	// The cells: from the start of the content area to the page's end.
	content := int(page.b[5])<<8 | int(page.b[6])
	page.overwrite(tb, content, bytes.Repeat([]byte{0x7f}, len(page.b)-content))
}

// DamageLastLeaf makes the last leaf page, in key order, of the table or
// index name in the closed database at path unreadable: its page type is
// zeroed, which SQLite refuses as soon as it loads the page. A statement
// scanning the tree in order reads every leaf before it and then stops,
// "database disk image is malformed": damage met in the middle of a scan.
func DamageLastLeaf(tb testing.TB, path, name string) {
	tb.Helper()
	// dbstat's path names a page by the child indexes from the root, fixed
	// width: in text order the pages are in key order.
	page := readPage(tb, path, `SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path DESC LIMIT 1`, name)
	page.overwrite(tb, 0, []byte{0})
}

// filePage is one page of a closed database file, as read by readPage.
type filePage struct {
	path string
	off  int64 // of the page in the file
	b    []byte
}

// readPage reads the page whose number the query (one argument, name)
// finds in the closed database at path.
func readPage(tb testing.TB, path, query, name string) filePage {
	tb.Helper()
	var no, size int64
	db := ReadDB(tb, path)
	if err := db.QueryRow(query, name).Scan(&no); err != nil {
		tb.Fatalf("page of %s: %v", name, err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		tb.Fatal(err)
	}
	db.Close()
	p := filePage{path: path, off: (no - 1) * size, b: make([]byte, size)}
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(p.b, p.off); err != nil {
		tb.Fatal(err)
	}
	return p
}

// overwrite writes b at offset at of the page, in the file.
func (p filePage) overwrite(tb testing.TB, at int, b []byte) {
	tb.Helper()
	f, err := os.OpenFile(p.path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, p.off+int64(at)); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}
