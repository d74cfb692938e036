package httpd

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
)

// A request net/http cannot parse never reaches a handler: net/http
// answers it itself, in plain text, straight to the connection, and
// closes it. 400 for a malformed request line or header, 431 past
// MaxHeaderBytes, 501 for a Transfer-Encoding it does not know, 505 for a
// protocol version it does not serve; and 417, with no body, to an Expect
// other than 100-continue. Every other answer comb gives is a
// JSON object with an error, and bad input is a 4xx, so a client (or a
// count of 5xx answers) can tell a refused request from a broken server:
// the connections comb serves rewrite those replies as JSON, each 5xx of
// them as 400 (docs/wire.md).
//
// The replies are told apart by their head: net/http writes them in one
// write, with its own two headers straight after the status line, in an
// order (Content-Type before Connection) that no reply through a
// ResponseWriter has, since those are written sorted and with a Date. The
// 417 is the one status comb's handlers never answer. A reply that does
// not match, from a net/http that writes them otherwise, goes out as it
// was written.

// parseErrorHeaders is what net/http writes between the status line of
// such a reply and its text.
const parseErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// maxStatusLine bounds the status line a reply is looked at for: net/http's
// longest, a 400 naming what was malformed, is under a hundred bytes.
const maxStatusLine = 128

// parseErrorReply returns p as JSON when p is net/http's reply to a
// request it could not parse.
func parseErrorReply(p []byte) ([]byte, bool) {
	if bytes.HasPrefix(p, []byte(expectationFailed)) && bytes.HasSuffix(p, []byte("\r\n\r\n")) &&
		len(p) <= maxStatusLine+len(expectationFailed) {
		return jsonRefusal(http.StatusExpectationFailed,
			"unsupported Expect header: send Expect: 100-continue, or no Expect"), true
	}
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 4 || rest[3] != ' ' {
		return nil, false
	}
	end := bytes.IndexByte(rest[:min(len(rest), maxStatusLine)], '\r')
	if end < 0 || !bytes.HasPrefix(rest[end:], []byte(parseErrorHeaders)) {
		return nil, false
	}
	code, err := strconv.Atoi(string(rest[:3]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	// "400 Bad Request: missing required Host header": what follows the
	// reason names the fault, from net/http's fixed set of texts.
	_, detail, _ := bytes.Cut(rest[4:end], []byte(": "))
	var msg string
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		msg = "request line and headers too large: this server reads at most " +
			strconv.Itoa(MaxHeaderBytes>>10) + " KiB of them"
	case http.StatusNotImplemented:
		msg = "unsupported Transfer-Encoding: send the body with a Content-Length, or with Transfer-Encoding: chunked"
	case http.StatusHTTPVersionNotSupported:
		msg = "unsupported protocol version: this server speaks HTTP/1.1 and HTTP/1.0"
	default:
		msg = "bad request: the request line or a header is not valid HTTP/1.1"
		if len(detail) > 0 {
			msg = "bad request: " + string(detail)
		}
	}
	if code >= 500 {
		code = http.StatusBadRequest // the request is what cannot be served
	}
	return jsonRefusal(code, msg), true
}

// expectationFailed begins net/http's answer to an Expect it does not
// serve: a head without a body, which ends the write.
const expectationFailed = "HTTP/1.1 417 Expectation Failed\r\n"

// jsonRefusal is a whole reply of code with msg as its JSON error, that
// closes the connection.
func jsonRefusal(code int, msg string) []byte {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	reply := make([]byte, 0, 160+len(body))
	reply = append(reply, "HTTP/1.1 "...)
	reply = strconv.AppendInt(reply, int64(code), 10)
	reply = append(reply, ' ')
	reply = append(reply, http.StatusText(code)...)
	reply = append(reply, "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "...)
	reply = strconv.AppendInt(reply, int64(len(body)), 10)
	reply = append(reply, "\r\n\r\n"...)
	return append(reply, body...)
}

// writeConn writes p to conn, the connection of slot s, net/http's
// replies to requests it could not parse as JSON (parseErrorReply), each
// write bounded by the server's stall (writeStalling).
func writeConn(conn net.Conn, s *slot, p []byte) (int, error) {
	if reply, ok := parseErrorReply(p); ok {
		if _, err := writeStalling(conn, s.c.stall, &s.writeUntil, reply); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return writeStalling(conn, s.c.stall, &s.writeUntil, p)
}
