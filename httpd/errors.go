package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/comb-broker/comb/broker"
)

// badRequest is a refusal whose text goes to the client as is.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

var errBadBody = errors.New("bad body")

// errorStatus decides the status of every error a handler answers with,
// and the message the client reads; it is the only place that does.
func errorStatus(err error) (status int, msg string) {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var br *badRequest
	switch {
	case errors.As(err, &br):
		return http.StatusBadRequest, br.msg
	case errors.Is(err, errEmptyBody):
		return http.StatusBadRequest, "Request body is required"
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", tooBig.Limit)
	case errors.Is(err, errBodiesBusy):
		return http.StatusServiceUnavailable, "Too many request bodies being read, retry shortly"
	case errors.Is(err, errBodyTooSlow):
		return http.StatusRequestTimeout, "Request body arrived too slowly"
	case errors.As(err, &syntax), errors.As(err, &typ), errors.Is(err, errBadBody):
		return http.StatusBadRequest, "Invalid JSON body: " + err.Error()
	case errors.Is(err, broker.ErrForwarderNotFound):
		return http.StatusNotFound, "Forwarder not found"
	case errors.Is(err, broker.ErrForwarderExists):
		return http.StatusConflict, "Forwarder already exists"
	case errors.Is(err, broker.ErrQuarantineNotFound):
		return http.StatusNotFound, "Quarantined segment not found"
	case errors.Is(err, broker.ErrStillDamaged), errors.Is(err, broker.ErrNoGroupPast):
		return http.StatusConflict, err.Error()
	case errors.Is(err, broker.ErrSnapshotNotFound):
		return http.StatusNotFound, "Snapshot not found (unknown or expired)"
	case errors.Is(err, broker.ErrSnapshotExists):
		return http.StatusConflict, "Snapshot already exists"
	case errors.Is(err, broker.ErrSnapshotConflict):
		return http.StatusConflict, strings.TrimPrefix(err.Error(), broker.ErrSnapshotConflict.Error()+": ")
	case errors.Is(err, broker.ErrQueueNotFound):
		return http.StatusNotFound, "Queue not found"
	case errors.Is(err, broker.ErrPartitionNotFound):
		return http.StatusNotFound, "Partition not found"
	case errors.Is(err, broker.ErrMessageNotFound):
		return http.StatusNotFound, "Message not found"
	case errors.Is(err, broker.ErrInvalid):
		return http.StatusBadRequest, strings.TrimPrefix(err.Error(), broker.ErrInvalid.Error()+": ")
	case errors.Is(err, broker.ErrBusy):
		return http.StatusServiceUnavailable, "Too many pushes in flight, retry shortly"
	case errors.Is(err, broker.ErrFull):
		// Nothing of the request was stored; reads, pops and acks go on,
		// and writes resume once space returns (retention, a larger cap).
		return http.StatusInsufficientStorage, "Database is full (disk or --max-db-bytes): nothing was written; free space and retry"
	case errors.Is(err, broker.ErrClosed):
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
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, shapes ...replyShape) {
	status, msg := errorStatus(err)
	if status == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if errors.Is(err, broker.ErrBusy) || errors.Is(err, errBodiesBusy) {
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
		case errors.Is(err, broker.ErrSnapshotNotFound):
			msg = fmt.Sprintf("Snapshot %q not found (unknown or expired)", name)
		case errors.Is(err, broker.ErrSnapshotExists):
			msg = fmt.Sprintf("Snapshot %q already exists", name)
		case errors.Is(err, broker.ErrSnapshotConflict):
		default:
			return nil
		}
		return map[string]any{"success": false, "error": msg}
	}
}
