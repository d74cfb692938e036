package httpd_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A request net/http cannot parse is answered by net/http itself, before
// any handler: comb's connections answer it as every other refusal, a
// 4xx with a JSON error, never a 5xx, and it writes nothing.
func TestRequestsNetHTTPCannotParseAreAnsweredInJSON(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, _, _, _ := serveInBackground(t, b, nil)
	host := strings.TrimPrefix(base, "http://")
	push := `{"items":[{"queue":"bad","payload":1}]}`
	for _, c := range []struct {
		name, req string
		want      int
		says      string
	}{
		{"unknown transfer coding", "POST /api/v1/push HTTP/1.1\r\nHost: " + host +
			"\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" +
			"27\r\n" + push + "\r\n0\r\n\r\n", http.StatusBadRequest, "Transfer-Encoding"},
		{"unsupported version", "POST /api/v1/push HTTP/3.0\r\nHost: " + host +
			"\r\nContent-Type: application/json\r\nContent-Length: 39\r\n\r\n" + push, http.StatusBadRequest, "protocol version"},
		{"two lengths", "POST /api/v1/push HTTP/1.1\r\nHost: " + host +
			"\r\nContent-Length: 39\r\nContent-Length: 40\r\n\r\n" + push, http.StatusBadRequest, "bad request"},
		{"no host", "POST /api/v1/push HTTP/1.1\r\nContent-Length: 39\r\n\r\n" + push,
			http.StatusBadRequest, "missing required Host header"},
		{"bad header name", "POST /api/v1/push HTTP/1.1\r\nHost: " + host + "\r\nBad Name: x\r\nContent-Length: 39\r\n\r\n" + push,
			http.StatusBadRequest, "invalid header name"},
		{"bad escape in path", "GET /api/v1/resources/queues/%zz HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
			http.StatusBadRequest, "bad request"},
		{"unknown expectation", "POST /api/v1/push HTTP/1.1\r\nHost: " + host + "\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 39\r\n\r\n" + push,
			http.StatusExpectationFailed, "Expect"},
		{"headers past the bound", "GET /health HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + strings.Repeat("h", 100<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, "at most 64 KiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go conn.Write([]byte(c.req)) // may fail once the server has answered and closed
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var e struct{ Error string }
			if resp.StatusCode != c.want || resp.Header.Get("Content-Type") != "application/json" ||
				json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, c.says) {
				t.Fatalf("%d %v %q; want %d and a JSON error saying %q", resp.StatusCode, resp.Header, body, c.want, c.says)
			}
			if resp.ContentLength != int64(len(body)) || !resp.Close {
				t.Errorf("length %d of a body of %d, close %v", resp.ContentLength, len(body), resp.Close)
			}
		})
	}
	if qs, err := b.QueueList(t.Context(), combtype.QueueFilter{}); err != nil || len(qs) != 0 {
		t.Errorf("after the refused pushes: queues %v, %v; want none", qs, err)
	}
	// The connections serve as before.
	resp, err := http.Post(base+"/api/v1/push", "application/json", strings.NewReader(push))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("a valid push after them: %d", resp.StatusCode)
	}
}

// A method the console does not answer, on one of its paths, is refused
// in JSON like every other refusal; before, in the console's plain text.
func TestAConsolePathRefusesOtherMethodsInJSON(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	for _, c := range []struct{ method, path string }{{"POST", "/"}, {"TRACE", "/"}, {"POST", "/favicon.ico"}, {"DELETE", "/ui/"}} {
		req, err := http.NewRequest(c.method, s.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Client.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Content-Type") != "application/json" || err != nil ||
			body["error"] == nil || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: %d %q Allow %q, %v %v", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"),
				resp.Header.Get("Allow"), body, err)
		}
	}
}
