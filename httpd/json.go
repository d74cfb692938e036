package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"time"
)

// errEmptyBody is a request that needed a body and had none.
var errEmptyBody = errors.New("empty body")

// rawString reads an optional JSON string field. It reports whether the
// field held a value other than null, and whether that value was a string.
func rawString(raw json.RawMessage) (s string, present, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, true
	}
	if raw[0] != '"' {
		return "", true, false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true, true
	}
	// A variable of this branch's own: were it s, its address taken here
	// would put s on the heap on every call, escaped or not.
	var unquoted string
	if err := json.Unmarshal(raw, &unquoted); err != nil {
		return "", true, false
	}
	return unquoted, true, true
}

// rawBool reads an optional JSON boolean (or a "true"/"false" string).
func rawBool(raw json.RawMessage) (v, present, ok bool) {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "", "null":
		return false, false, true
	case "true", `"true"`, "1":
		return true, true, true
	case "false", `"false"`, "0":
		return false, true, true
	}
	return false, true, false
}

// rawInt reads an optional JSON integer, accepting numeric strings.
func rawInt(raw json.RawMessage) (v int64, present, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, true
	}
	if raw[0] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true, true
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f == float64(int64(f)) {
		return int64(f), true, true
	}
	return 0, true, false
}

// queryBool is true for "true" and "1", false for anything else.
func queryBool(q url.Values, key string) bool {
	v := q.Get(key)
	return v == "true" || v == "1"
}

// queryInt falls back to def when key is absent or malformed.
func queryInt(q url.Values, key string, def int) int {
	if n, err := strconv.Atoi(q.Get(key)); err == nil {
		return n
	}
	return def
}

// Times on the wire: pop createdAt with microseconds, everything else milliseconds.
const (
	timeMicro = "2006-01-02T15:04:05.000000Z"
	timeMilli = "2006-01-02T15:04:05.000Z"
)

func fmtMicro(t time.Time) string { return t.UTC().Format(timeMicro) }

func fmtMilli(t time.Time) string { return t.UTC().Format(timeMilli) }

// nullString is JSON null for "".
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
