package forward

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// upstream speaks the push, pop and ack routes of one upstream broker.
type upstream struct {
	client *http.Client
	base   string // without a trailing slash
	token  string
}

// UpstreamError is a reply of the upstream other than the one expected.
type UpstreamError struct {
	Status int // HTTP status; 0 for a transport failure
	Msg    string
}

func (e *UpstreamError) Error() string {
	if e.Status == 0 {
		return "upstream unreachable: " + e.Msg
	}
	return fmt.Sprintf("upstream HTTP %d: %s", e.Status, e.Msg)
}

// Permanent reports whether sending the same request again can never
// succeed: the upstream refused its content (malformed, too large,
// forbidden). Everything else (5xx, transport errors, 401 for a token
// being rotated, 404 for an upstream still starting, 429) is worth a retry.
func (e *UpstreamError) Permanent() bool {
	switch e.Status {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong,
		http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// permanent reports whether err is a refusal that no retry fixes, by the
// upstream or by the local broker.
func permanent(err error) bool {
	var ue *UpstreamError
	return (errors.As(err, &ue) && ue.Permanent()) || errors.Is(err, combtype.ErrInvalid)
}

// do sends a JSON request and returns the status and body of any HTTP reply.
func (u *upstream) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var parts [][]byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode upstream request: %w", err)
		}
		parts = [][]byte{b}
	}
	return u.send(ctx, method, path, parts, body != nil)
}

// send sends a request whose body is parts in turn (none: no body), read
// from where they lie rather than copied into one, and returns the status
// and body of any HTTP reply.
func (u *upstream) send(ctx context.Context, method, path string, parts [][]byte, hasBody bool) (int, []byte, error) {
	var n int64
	for _, p := range parts {
		n += int64(len(p))
	}
	body := func() io.Reader {
		rs := make([]io.Reader, len(parts))
		for i, p := range parts {
			rs[i] = bytes.NewReader(p)
		}
		return io.MultiReader(rs...)
	}
	var rd io.Reader
	if hasBody {
		rd = body()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.base+path, rd)
	if err != nil {
		return 0, nil, &UpstreamError{Msg: err.Error()}
	}
	if hasBody {
		req.ContentLength = n
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if u.token != "" {
		req.Header.Set("Authorization", "Bearer "+u.token)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, &UpstreamError{Msg: err.Error()}
	}
	defer resp.Body.Close()
	if resp.ContentLength > maxReplyBytes {
		return 0, nil, &UpstreamError{Status: resp.StatusCode, Msg: fmt.Sprintf("reply of %d bytes, past the %d this forwarder reads", resp.ContentLength, maxReplyBytes)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, &UpstreamError{Msg: "read reply: " + err.Error()}
	}
	if len(b) > maxReplyBytes {
		return 0, nil, &UpstreamError{Status: resp.StatusCode, Msg: fmt.Sprintf("reply past the %d bytes this forwarder reads", maxReplyBytes)}
	}
	return resp.StatusCode, b, nil
}

// maxReplyBytes bounds what a forwarder reads of one upstream reply: a
// pull's batch of messages, at most as large as a push comb takes
// (httpd.DefaultMaxBodyBytes). An upstream answering more (by mistake, or
// a server that is not Queen) failed the forwarder only after the server
// had read it whole, again at every retry: a 300 MB reply took comb to
// 628-739 MB.
const maxReplyBytes = 64 << 20

// replyError turns an unexpected reply into an UpstreamError carrying the
// upstream's own error text when it sent one.
func replyError(status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return &UpstreamError{Status: status, Msg: cmp.Or(msg, http.StatusText(status))}
}

// wireItem is one push item.
type wireItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId,omitempty"`
}

// Item statuses of a push reply.
const (
	itemQueued    = "queued"    // stored now
	itemDuplicate = "duplicate" // stored before under this (partition, transactionId)
	// itemBuffered: parked outside the log (Queen's file buffer after a
	// database error, or push maintenance), stored later if it can be.
	// Queen parks a request whose insert its database refuses the same
	// way, and its replay of that request then fails for ever, so it is
	// no proof of storage.
	itemBuffered = "buffered"
)

// push sends items and returns the upstream's status for each: queued,
// duplicate or buffered. Queen answers 200 and comb 201; anything else,
// and any other item status, is an error.
func (u *upstream) push(ctx context.Context, items []wireItem) ([]string, error) {
	parts, ok := pushBody(items)
	if !ok {
		// A payload that is not JSON: encoded as any body, to fail as one.
		b, err := json.Marshal(map[string]any{"items": items})
		if err != nil {
			return nil, fmt.Errorf("encode upstream request: %w", err)
		}
		parts = [][]byte{b}
	}
	status, body, err := u.send(ctx, http.MethodPost, "/api/v1/push", parts, true)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return nil, replyError(status, body)
	}
	var results []struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(body, &results); err != nil {
		return nil, replyError(status, body)
	}
	if len(results) != len(items) {
		return nil, &UpstreamError{Status: status, Msg: fmt.Sprintf("push of %d items answered %d results", len(items), len(results))}
	}
	out := make([]string, len(results))
	for i, r := range results {
		switch r.Status {
		case itemQueued, itemDuplicate, itemBuffered:
			out[i] = r.Status
		default:
			// A per-item failure is the upstream's trouble, not the
			// message's: the whole batch is sent again; dedup absorbs the
			// items that were stored.
			return nil, &UpstreamError{Status: http.StatusServiceUnavailable,
				Msg: fmt.Sprintf("item %d (%s) not stored: %s %s", i, items[i].TransactionID, r.Status, r.Error)}
		}
	}
	return out, nil
}

// pushBody is the body of a push of items, {"items":[...]}, as parts to
// send in turn: each payload is sent from where it lies. Encoded whole,
// one message of 50 MB was in memory three times over (the payload, the
// encoder's buffer grown to 64 MB, the copy it returns): comb forwarding
// it peaked at 182 MB, against 79 MB without the forwarder. ok is false
// when a payload is not valid JSON.
func pushBody(items []wireItem) (parts [][]byte, ok bool) {
	head := []byte(`{"items":[`)
	for i := range items {
		it := &items[i]
		if !json.Valid(it.Payload) {
			return nil, false
		}
		if i > 0 {
			head = append(head, ',')
		}
		head = append(head, `{"queue":`...)
		head = appendJSONString(head, it.Queue)
		head = append(head, `,"partition":`...)
		head = appendJSONString(head, it.Partition)
		head = append(head, `,"transactionId":`...)
		head = appendJSONString(head, it.TransactionID)
		if it.TraceID != "" {
			head = append(head, `,"traceId":`...)
			head = appendJSONString(head, it.TraceID)
		}
		head = append(head, `,"payload":`...)
		if len(it.Payload) < 4<<10 {
			head = append(head, it.Payload...)
			head = append(head, '}')
			continue
		}
		parts = append(parts, head, it.Payload)
		head = []byte{'}'}
	}
	head = append(head, "]}"...)
	return append(parts, head), true
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes (invalid UTF-8 as U+FFFD)
	return append(b, q...)
}

// upstreamState is what an upstream says of its storing of pushes.
type upstreamState struct {
	// storing: /health answers 200 with the database connected, and push
	// maintenance is off. why says otherwise, or that it cannot tell.
	storing bool
	why     string
	// unsure: its health is good but its maintenance state cannot be read
	// (the token lacks the admin role): storing is assumed, not known.
	unsure bool
	// buffered is how many pushed items it holds parked, waiting for its
	// replay (Queen's file buffer, comb's maintenance buffer); 0 when it
	// does not say.
	buffered int64
}

// state asks the upstream whether it stores pushes now.
func (u *upstream) state(ctx context.Context) upstreamState {
	status, body, err := u.do(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return upstreamState{why: err.Error()}
	}
	var h struct {
		Database string `json:"database"`
	}
	if status != http.StatusOK || (json.Unmarshal(body, &h) == nil && h.Database != "" && h.Database != "connected") {
		return upstreamState{why: fmt.Sprintf("its /health answered %d %s", status, snippet(body))}
	}
	status, body, err = u.do(ctx, http.MethodGet, "/api/v1/system/maintenance", nil)
	if err != nil {
		return upstreamState{why: err.Error()}
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return upstreamState{storing: true, unsure: true,
			why: fmt.Sprintf("its maintenance state cannot be read (HTTP %d)", status)}
	}
	var m struct {
		MaintenanceMode  *bool `json:"maintenanceMode"`
		BufferedMessages int64 `json:"bufferedMessages"`
	}
	switch {
	case status != http.StatusOK || json.Unmarshal(body, &m) != nil || m.MaintenanceMode == nil:
		return upstreamState{why: fmt.Sprintf("its maintenance state is unknown: HTTP %d %s", status, snippet(body))}
	case *m.MaintenanceMode:
		return upstreamState{why: "its push maintenance is on", buffered: m.BufferedMessages}
	}
	return upstreamState{storing: true, buffered: m.BufferedMessages}
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// wireMessage is one message of a pop reply.
type wireMessage struct {
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       string          `json:"leaseId"`
	Data          json.RawMessage `json:"data"`
	TraceID       *string         `json:"traceId"`
	// CreatedAt is kept as text: a reply is never refused for its form.
	CreatedAt string `json:"createdAt"`
}

// pop long-polls queue for group; no messages is (nil, nil).
func (u *upstream) pop(ctx context.Context, queue, group string, batch int, wait time.Duration) ([]wireMessage, error) {
	q := url.Values{
		"batch":         {strconv.Itoa(batch)},
		"wait":          {strconv.FormatBool(wait > 0)},
		"timeout":       {strconv.FormatInt(wait.Milliseconds(), 10)},
		"consumerGroup": {group},
	}
	status, body, err := u.do(ctx, http.MethodGet, "/api/v1/pop/queue/"+url.PathEscape(queue)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	switch status {
	case http.StatusNoContent:
		return nil, nil
	case http.StatusOK:
	default:
		return nil, replyError(status, body)
	}
	var reply struct {
		Messages []wireMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, &UpstreamError{Status: status, Msg: "pop reply: " + err.Error()}
	}
	return reply.Messages, nil
}

// wireAck is one acknowledgement.
type wireAck struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	Status        string `json:"status"`
	Error         string `json:"error,omitempty"`
}

// ack sends acks for group. Items the upstream refused (an expired lease,
// typically) are not an error: their messages come back and the local
// dedup absorbs them; the count of refused items is returned.
func (u *upstream) ack(ctx context.Context, group string, acks []wireAck) (refused int, err error) {
	status, body, err := u.do(ctx, http.MethodPost, "/api/v1/ack/batch",
		map[string]any{"acknowledgments": acks, "consumerGroup": group})
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, replyError(status, body)
	}
	var results []struct {
		Success bool `json:"success"`
	}
	if json.Unmarshal(body, &results) == nil {
		for _, r := range results {
			if !r.Success {
				refused++
			}
		}
	}
	return refused, nil
}
