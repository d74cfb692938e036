package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/comb-broker/comb/combtype"
)

// The adapter's own refusals. Each is a type or value here so that
// errorStatus, not the handler, decides its status; its text goes to the
// client as is.
type (
	// badRequest is a request the adapter cannot read: 400.
	badRequest struct{ msg string }
	// unauthorized is a missing or invalid token: 401.
	unauthorized struct{ msg string }
	// forbidden is a caller, host or origin not allowed what it asked: 403.
	forbidden struct{ msg string }
)

func (e *badRequest) Error() string   { return e.msg }
func (e *unauthorized) Error() string { return e.msg }
func (e *forbidden) Error() string    { return e.msg }

var (
	// errNoRoute is a path no route or console page serves: 404.
	errNoRoute = errors.New("Not found")
	// errNoForwarding is a forwarder route on a server that runs none: 503.
	errNoForwarding = errors.New("Forwarding is not enabled on this server")
)

var errBadBody = errors.New("bad body")

// errorStatus decides the status of every error a handler answers with,
// and the message the client reads; it is the only place that does.
func errorStatus(err error) (status int, msg string) {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var br *badRequest
	var unauth *unauthorized
	var forbid *forbidden
	switch {
	case errors.As(err, &br):
		return http.StatusBadRequest, br.msg
	case errors.As(err, &unauth):
		return http.StatusUnauthorized, unauth.msg
	case errors.As(err, &forbid):
		return http.StatusForbidden, forbid.msg
	case errors.Is(err, errNoRoute):
		return http.StatusNotFound, errNoRoute.Error()
	case errors.Is(err, errNoForwarding):
		return http.StatusServiceUnavailable, errNoForwarding.Error()
	case errors.Is(err, errEmptyBody):
		return http.StatusBadRequest, "Request body is required"
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", tooBig.Limit)
	case errors.Is(err, errBodiesBusy):
		return http.StatusServiceUnavailable, "Too many request bodies being read, retry shortly"
	case errors.Is(err, errRepliesBusy):
		return http.StatusServiceUnavailable, "Too many pop replies being written, retry shortly"
	case errors.Is(err, errBodyTooSlow):
		return http.StatusRequestTimeout, "Request body arrived too slowly"
	case errors.As(err, &syntax), errors.As(err, &typ), errors.Is(err, errBadBody):
		return http.StatusBadRequest, "Invalid JSON body: " + err.Error()
	case errors.Is(err, combtype.ErrForwarderNotFound):
		return http.StatusNotFound, "Forwarder not found"
	case errors.Is(err, combtype.ErrForwarderExists):
		return http.StatusConflict, "Forwarder already exists"
	case errors.Is(err, combtype.ErrQuarantineNotFound):
		return http.StatusNotFound, "Quarantined segment not found"
	case errors.Is(err, combtype.ErrStillDamaged), errors.Is(err, combtype.ErrNoGroupPast):
		return http.StatusConflict, err.Error()
	case errors.Is(err, combtype.ErrSnapshotNotFound):
		return http.StatusNotFound, "Snapshot not found (unknown or expired)"
	case errors.Is(err, combtype.ErrQueryNotFound):
		return http.StatusNotFound, "Streaming query not found"
	case errors.Is(err, combtype.ErrSnapshotExists):
		return http.StatusConflict, "Snapshot already exists"
	case errors.Is(err, combtype.ErrSnapshotConflict):
		return http.StatusConflict, strings.TrimPrefix(err.Error(), combtype.ErrSnapshotConflict.Error()+": ")
	case errors.Is(err, combtype.ErrQueueNotFound):
		return http.StatusNotFound, "Queue not found"
	case errors.Is(err, combtype.ErrPartitionNotFound):
		return http.StatusNotFound, "Partition not found"
	case errors.Is(err, combtype.ErrMessageNotFound):
		return http.StatusNotFound, "Message not found"
	case errors.Is(err, combtype.ErrNoTarget):
		return http.StatusBadRequest, "Must specify toEnd=true or a timestamp"
	case errors.Is(err, combtype.ErrManyTargets):
		return http.StatusBadRequest, "Specify only one of toEnd, timestamp, offset or snapshot"
	case errors.Is(err, combtype.ErrInvalid):
		return http.StatusBadRequest, strings.TrimPrefix(err.Error(), combtype.ErrInvalid.Error()+": ")
	case errors.Is(err, combtype.ErrBusy):
		return http.StatusServiceUnavailable, "Too many pushes in flight, retry shortly"
	case errors.Is(err, combtype.ErrFull):
		// Nothing of the request was stored; reads, pops and acks go on,
		// and writes resume once space returns (retention, a larger cap).
		return http.StatusInsufficientStorage, "Database is full (disk or --max-db-bytes): nothing was written; free space and retry"
	case errors.Is(err, combtype.ErrQueueLimit):
		// Retrying does not help, so not a 5xx (Queen's clients retry
		// those): the server's state, not the request, is in the way
		// until a queue is deleted or the bound raised.
		return http.StatusConflict, "Queue limit reached: the database holds as many queues as it may (comb serve --max-queues); nothing was written: delete a queue or raise the limit"
	case errors.Is(err, combtype.ErrGroupLimit):
		return http.StatusConflict, "Consumer group limit reached: the database holds as many group subscriptions as it may (comb serve --max-groups); nothing was written: delete a consumer group or raise the limit"
	case errors.Is(err, combtype.ErrForwarderLimit):
		return http.StatusConflict, "Forwarder limit reached: the database holds as many forwarders as it may (comb serve --max-forwarders); nothing was written: delete a forwarder or raise the limit"
	case errors.Is(err, combtype.ErrSnapshotLimit):
		return http.StatusConflict, "Snapshot limit reached: the database holds as many live snapshots as it may (comb serve --max-snapshots); nothing was written: delete a snapshot or raise the limit"
	case errors.Is(err, combtype.ErrStreamQueryLimit):
		return http.StatusConflict, "Streaming query limit reached: the database holds as many streaming queries as it may (comb serve --max-stream-queries); nothing was written: delete a query (DELETE /api/v1/streams/queries/NAME) or raise the limit"
	case errors.Is(err, combtype.ErrFileBusy):
		// Another program (a sqlite3 session, a DB browser) began a write
		// transaction on the file and has not ended it. Queen's clients
		// retry a 5xx and give up on a 4xx, and retrying is right: the
		// write resumes once that transaction ends.
		return http.StatusServiceUnavailable, "Database file is locked by another program's write transaction (a sqlite3 session or DB browser?): nothing was written; retry shortly"
	case errors.Is(err, combtype.ErrReplaced):
		return http.StatusServiceUnavailable, "Database file, or its -wal or -shm, was replaced, removed or cut short while the server ran (a backup restored over it?): nothing was written; restart the server to serve the file now at its path"
	case errors.Is(err, combtype.ErrDamaged):
		// Still the server's failure, and logged as one; the message says
		// where to look rather than "Internal server error".
		return http.StatusInternalServerError, "Database file is damaged (SQLite: database disk image is malformed): nothing was written; the server's operator should run comb check and restore from a backup"
	case errors.Is(err, combtype.ErrUnwritable):
		// The file system's refusal, not a fault of the request nor of
		// comb's: a 503 that Queen's clients retry, which succeeds once
		// the file can be written again.
		return http.StatusServiceUnavailable, "Database file cannot be written (a read-only file system, an immutable file, its permissions, or a disk error): nothing was written; retry later, and the server's operator should check the disk and the file"
	case errors.Is(err, combtype.ErrClosed):
		return http.StatusServiceUnavailable, "Server is shutting down"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "Request cancelled"
	}
	return http.StatusInternalServerError, "Internal server error"
}

// replyShape words a failure for one route whose body Queen shapes its own
// way: given the error and the status and message errorStatus decided, it
// returns the body, or nil for the usual {"error": msg}. It never changes
// the status.
type replyShape func(err error, status int, msg string) any

// fail answers err with the status errorStatus decides, in the body shape
// (the first that answers non-nil) or {"error": msg}. A 500 is logged: it
// is the server's fault, not the client's.
func (s *Handler) fail(w http.ResponseWriter, r *http.Request, err error, shapes ...replyShape) {
	status, msg := errorStatus(err)
	if status == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if errors.Is(err, combtype.ErrBusy) || errors.Is(err, errBodiesBusy) || errors.Is(err, errRepliesBusy) ||
		errors.Is(err, combtype.ErrFileBusy) || errors.Is(err, combtype.ErrUnwritable) {
		w.Header().Set("Retry-After", "1")
	}
	for _, shape := range shapes {
		if body := shape(err, status, msg); body != nil {
			writeJSON(w, status, body)
			return
		}
	}
	writeError(w, status, msg)
}

// failed is Queen's {"success": false, "error": msg} for one status.
func failed(only int) replyShape {
	return func(_ error, status int, msg string) any {
		if status != only {
			return nil
		}
		return map[string]any{"success": false, "error": msg}
	}
}

// snapshotNamed words the snapshot errors with the snapshot's name.
func snapshotNamed(name string) replyShape {
	return func(err error, _ int, msg string) any {
		switch {
		case errors.Is(err, combtype.ErrSnapshotNotFound):
			msg = fmt.Sprintf("Snapshot %q not found (unknown or expired)", name)
		case errors.Is(err, combtype.ErrSnapshotExists):
			msg = fmt.Sprintf("Snapshot %q already exists", name)
		case errors.Is(err, combtype.ErrSnapshotConflict):
		default:
			return nil
		}
		return map[string]any{"success": false, "error": msg}
	}
}

// itemErrorText words the error of one item of a reply (an ack's, a lease
// extension's, a cycle's) as Queen's clients read it; "" for nil.
func itemErrorText(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, combtype.ErrInvalidLease):
		return "Invalid or expired lease"
	case errors.Is(err, combtype.ErrMessageNotFound):
		return "Message not found"
	case errors.Is(err, combtype.ErrLeaseNotFound):
		return "Lease not found"
	case errors.Is(err, combtype.ErrLeaseExpired):
		return "Lease already expired"
	case errors.Is(err, combtype.ErrQueryNotFound):
		return "Query not found"
	case errors.Is(err, combtype.ErrAlreadyAcked):
		return "Message already acknowledged"
	case errors.Is(err, combtype.ErrInvalid):
		return strings.TrimPrefix(err.Error(), combtype.ErrInvalid.Error()+": ")
	}
	return err.Error()
}
