package httpd

import (
	"net"
	"time"
)

// Replies to clients that read nothing.
//
// comb's server has no write timeout: a reply may take as long as its
// client needs (a long-poll, a backup of gigabytes over a slow link). But
// a client that reads nothing kept its reply, and what the reply holds,
// for as long as it kept the connection: the reply bytes in flight that
// every other pop waits for room in (four such clients of a 15 MB message
// made every other large pop wait a minute and answer 503), a temporary
// copy of the database per backup (20 unread backups of a 50 MB file held
// 1 GB), a scrape built whole.
//
// So each write to a connection is cut into writeStallChunk bytes, each
// of which the client must accept within Config.WriteStall (at least half
// of it: writeStalling): at the default, about 1 KiB a second, the rate
// bodies must arrive at (DefaultMinBodyRate). Past it the write fails, the connection closes
// and the handler ends, giving back what it held.

const (
	// DefaultWriteStall is Config.WriteStall's default.
	DefaultWriteStall = 60 * time.Second
	// writeStallChunk is how many bytes of a write each stall bounds.
	writeStallChunk = 64 << 10
)

// writeStalling writes p to conn, each writeStallChunk of it within stall
// (no bound if stall is not positive). until is the deadline this
// connection's writes set last: it is set again only once less than half
// of stall is left of it, so that a connection answering small requests
// one after another moves its deadline once in stall/2, not at every
// reply (a chunk then has between stall/2 and stall).
func writeStalling(conn net.Conn, stall time.Duration, until *time.Time, p []byte) (int, error) {
	if stall <= 0 {
		return conn.Write(p)
	}
	n := 0
	for {
		end := min(len(p), n+writeStallChunk)
		if now := time.Now(); until.Sub(now) < stall/2 {
			*until = now.Add(stall)
			if err := conn.SetWriteDeadline(*until); err != nil {
				return n, err
			}
		}
		m, err := conn.Write(p[n:end])
		n += m
		if err != nil || n == len(p) {
			return n, err
		}
	}
}
