package httpd

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/julienschmidt/httprouter"
)

// intQueryParams are the query parameters that are integers on every
// route that reads them. A malformed one ("1e13", "1.5", "abc", or past
// int64) used to fall back to its default silently, so a client asking for
// timeout=1e13 long-polled 30 s and one paging with limit=1.5 got 100
// rows; it is refused instead, before the handler runs.
var intQueryParams = []struct {
	name        string
	nonNegative bool
}{
	{"batch", false},      // clamped into range by the broker
	{"partitions", false}, // clamped into range by the broker
	{"timeout", false},    // range-checked by the broker
	{"limit", true},
	{"offset", true},
	{"minLagSeconds", false},
}

// checkIntQuery answers 400 naming the parameter when one of
// intQueryParams is present but not an integer (or negative where a
// count or position is meant); an empty value counts as absent. The check
// runs in a function of its own: the wrapper's frame stays on the stack
// of a parked pop while it waits (see broker.Broker.Pop).
func (s *Handler) checkIntQuery(h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if r.URL.RawQuery != "" {
			if err := badQuery(r.URL.RawQuery); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		h(w, r, ps)
	}
}

// badQuery is the refusal of a malformed query string: url.Values drops
// a pair it cannot decode (timeout=%ZZ), and the parameter was then taken
// for absent; or of its first malformed integer parameter. Not inlined:
// the frame of checkIntQuery's handler stays on the stack of every parked
// pop (parkedstack_test.go), and the parse's locals would grow it.
//
//go:noinline
func badQuery(raw string) error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return &badRequest{fmt.Sprintf("the query string is malformed: %v", err)}
	}
	return badIntQuery(q)
}

// badIntQuery is the refusal of the first malformed parameter of
// intQueryParams in q, or nil.
func badIntQuery(q url.Values) error {
	for _, p := range intQueryParams {
		for _, v := range q[p.name] {
			if v == "" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case p.nonNegative && (err != nil || n < 0):
				return &badRequest{fmt.Sprintf("%s must be a non-negative integer (got %q)", p.name, v)}
			case err != nil:
				return &badRequest{fmt.Sprintf("%s must be an integer (got %q)", p.name, v)}
			}
		}
	}
	return nil
}
