package httpd_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/combtest"
)

// lockWarned is a log handler that closes warned when the writer logs
// that another program's write transaction keeps it out of the file:
// the moment a write first met the lock.
type lockWarned struct {
	warned chan struct{}
	once   *bool
}

func (h lockWarned) Enabled(context.Context, slog.Level) bool { return true }
func (h lockWarned) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lockWarned) WithGroup(string) slog.Handler            { return h }
func (h lockWarned) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.Contains(r.Message, "another program holds a write transaction") && !*h.once {
		*h.once = true // the writer's goroutine is the only one that logs it
		close(h.warned)
	}
	return nil
}

// popAnswer is a pop's status and body.
type popAnswer struct {
	status int
	body   string
	err    error
}

// longPoll sends one pop of q for group g with query and delivers its
// answer on the returned channel.
func longPoll(base, query string) <-chan popAnswer {
	out := make(chan popAnswer, 1)
	go func() {
		resp, err := http.Get(base + "/api/v1/pop/queue/q?consumerGroup=g&" + query)
		if err != nil {
			out <- popAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		out <- popAnswer{status: resp.StatusCode, body: string(body), err: err}
	}()
	return out
}

// lockedServer serves a broker whose writes wait busy for another
// program's write transaction, behind the real server (parked pops leave
// net/http), and returns its base URL, the broker and a channel closed
// when a write first meets the lock.
func lockedServer(t *testing.T, busy time.Duration) (string, *combtest.Client, *broker.Broker, <-chan struct{}) {
	t.Helper()
	warned := make(chan struct{})
	h := lockWarned{warned: warned, once: new(bool)}
	b := combtest.MustOpenBroker(t, combtest.Options{Broker: func(o *broker.Options) {
		o.BusyTimeout = busy
		o.Logger = slog.New(h)
	}})
	base, _, _, _ := serveInBackground(t, b, nil)
	t.Cleanup(b.Drain) // before the server's own cleanup waits for Serve
	return base, &combtest.Client{TB: t, URL: base, HTTP: &http.Client{}}, b, warned
}

// TestALongPollOutwaitsAnOutsideWriteTransaction: a long-poll pop that
// meets another program's write transaction on the file (a sqlite3
// session after BEGIN IMMEDIATE) keeps waiting, within its own timeout,
// and is answered 200 with the message once the transaction ends, while
// writes and pops that do not wait are answered 503 after the busy
// timeout as before. Before: the long-poll was answered 503 after one
// busy timeout, though it had asked to wait a minute.
func TestALongPollOutwaitsAnOutsideWriteTransaction(t *testing.T) {
	const busy = 200 * time.Millisecond
	base, c, b, warned := lockedServer(t, busy)
	pushOne(t, base, "m")

	session := combtest.StartSQLite3Writer(t, b.DatabasePath())
	poll := longPoll(base, "wait=true&timeout=60000")
	select {
	case <-warned:
	case a := <-poll:
		t.Fatalf("the long-poll was answered before its claim met the lock: %+v", a)
	case <-time.After(time.Minute):
		t.Fatal("no write met the lock")
	}
	// Each of these waits out the busy timeout on a commit of its own and
	// is refused: the long-poll has by then met the lock more than once,
	// and must still be waiting.
	if r := c.Do("GET", "/api/v1/pop/queue/q?consumerGroup=g", nil); r.Status != http.StatusServiceUnavailable {
		t.Errorf("a pop without wait during the lock: %d %s, want 503 as before", r.Status, r.Body)
	}
	resp, err := http.Post(base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"q","transactionId":"during","payload":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a push during the lock: %d Retry-After %q, want 503, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	select {
	case a := <-poll:
		t.Fatalf("the long-poll was answered while the lock held, before its timeout: %d %s %v", a.status, a.body, a.err)
	default:
	}

	session.Close()
	var a popAnswer
	select {
	case a = <-poll:
	case <-time.After(time.Minute):
		t.Fatal("the long-poll was not answered after the lock ended")
	}
	var got struct {
		LeaseID  string `json:"leaseId"`
		Messages []struct {
			TransactionID string `json:"transactionId"`
			PartitionID   string `json:"partitionId"`
		} `json:"messages"`
	}
	if a.err != nil || a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &got) != nil ||
		len(got.Messages) != 1 || got.Messages[0].TransactionID != "m" {
		t.Fatalf("the long-poll after the lock ended: %d %s %v, want 200 with m", a.status, a.body, a.err)
	}
	// One lease, held by that answer: the group gets nothing more, and
	// the ack with it completes the message.
	if r := c.Do("GET", "/api/v1/pop/queue/q?consumerGroup=g", nil); r.Status != http.StatusNoContent {
		t.Errorf("a second pop while the long-poll's lease holds: %d %s, want 204", r.Status, r.Body)
	}
	ack := `{"transactionId":"m","partitionId":"` + got.Messages[0].PartitionID + `","leaseId":"` + got.LeaseID +
		`","consumerGroup":"g","status":"completed"}`
	resp, err = http.Post(base+"/api/v1/ack", "application/json", strings.NewReader(ack))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"success":true`) {
		t.Errorf("ack with the long-poll's lease: %d %s", resp.StatusCode, body)
	}
	pushOne(t, base, "after")
	r := c.Do("GET", "/api/v1/pop/queue/q?consumerGroup=g&batch=10", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"transactionId":"after"`) || strings.Contains(string(r.Body), `"transactionId":"m"`) {
		t.Errorf("the pop after the ack: %d %s, want only the message pushed after", r.Status, r.Body)
	}
}

// TestALongPollWhoseTimeoutPassesUnderAnOutsideWriteTransactionIs204: a
// long-poll whose timeout passes while another program's write
// transaction still holds the file is answered as any long-poll that got
// nothing: 204, which Queen's clients answer with their next long-poll,
// where a 503 would count as a failed attempt (retried after 1, 2 and 4
// s, the server marked unhealthy, then an error). It leaves no lease: the
// message is the group's next pop's once the transaction ends.
func TestALongPollWhoseTimeoutPassesUnderAnOutsideWriteTransactionIs204(t *testing.T) {
	const busy = 200 * time.Millisecond
	base, c, b, warned := lockedServer(t, busy)
	pushOne(t, base, "m")

	session := combtest.StartSQLite3Writer(t, b.DatabasePath())
	// Its timeout is several busy timeouts: it meets the lock, waits, and
	// its time runs out with the lock still held.
	a := <-longPoll(base, "wait=true&timeout=1000")
	select {
	case <-warned:
	default:
		t.Fatal("the long-poll never met the lock")
	}
	if a.err != nil || a.status != http.StatusNoContent || a.body != "" {
		t.Errorf("the long-poll at its timeout under the lock: %d %q %v, want 204", a.status, a.body, a.err)
	}
	session.Close()
	r := c.Do("GET", "/api/v1/pop/queue/q?consumerGroup=g", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"transactionId":"m"`) {
		t.Errorf("the group's pop after the lock ended: %d %s, want m (a lease left by the long-poll?)", r.Status, r.Body)
	}
}
