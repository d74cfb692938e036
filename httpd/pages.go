package httpd

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/comb-broker/comb/combtype"
)

// Paged listings (docs/wire.md, "Pages"). Queen answers these listings
// whole; comb answers at most combtype.MaxPageLimit rows, so a listing
// that fits is the reply Queen gives, and a larger one comes a page at a
// time. limit, offset and after select the page; the reply says where the
// next one starts in its Link header (rel="next") and, where the body is
// an object that can carry it, in "pagination".

// pageRequest is the page a request asks for, and whether it asked.
type pageRequest struct {
	combtype.Page
	asked bool // limit, offset or after was given
}

// readPage reads limit (1..MaxPageLimit; absent = the listing's whole
// set up to MaxPageLimit), offset and, where the listing hands out
// positions, after. Malformed integers were refused by checkIntQuery.
func readPage(r *http.Request, positions bool) (pageRequest, error) {
	q := r.URL.Query()
	var p pageRequest
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > combtype.MaxPageLimit {
			return p, &badRequest{fmt.Sprintf("limit must be between 1 and %d (got %q)", combtype.MaxPageLimit, v)}
		}
		p.Limit, p.asked = n, true
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, &badRequest{fmt.Sprintf("offset must be a non-negative integer (got %q)", v)}
		}
		p.Offset, p.asked = n, true
	}
	if v := q.Get("after"); v != "" {
		if !positions {
			return p, &badRequest{"after is not supported on this listing: page with limit and offset"}
		}
		p.After, p.asked = v, true
	}
	if p.Limit == 0 {
		p.Limit = combtype.DefaultPageLimit
	}
	return p, nil
}

// pageHeaders announces the next page: a Link to it (with after when the
// listing hands out positions, else the next offset) and X-Total-Count
// when the total is known.
func pageHeaders(w http.ResponseWriter, r *http.Request, p pageRequest, info combtype.PageInfo) {
	if info.Total >= 0 {
		w.Header().Set("X-Total-Count", strconv.FormatInt(info.Total, 10))
	}
	if info.Unsummed > 0 {
		// Queues whose rows are to come once their first background sum
		// is made (docs/wire.md).
		w.Header().Set("X-Stats-Pending", strconv.Itoa(info.Unsummed))
	}
	nextLink(w, r.URL.Path, r.URL.Query(), p, info)
}

// nextLink sets the Link to the page after p, on path with the query q
// (changed), when another page follows.
func nextLink(w http.ResponseWriter, path string, q url.Values, p pageRequest, info combtype.PageInfo) {
	if !info.More {
		return
	}
	q.Set("limit", strconv.Itoa(p.Limit))
	if info.Next != "" {
		q.Del("offset")
		q.Set("after", info.Next)
	} else {
		q.Set("offset", strconv.Itoa(p.Offset+p.Limit))
	}
	next := url.URL{Path: path, RawQuery: q.Encode()}
	w.Header().Set("Link", "<"+next.String()+`>; rel="next"`)
}

// pagePaginationOut is the page a reply holds, in object replies.
type pagePaginationOut struct {
	Limit  int     `json:"limit"`
	Offset int     `json:"offset"`
	Total  *int64  `json:"total,omitempty"`
	Next   *string `json:"next"` // after of the next page; null on the last
}

func pagination(p pageRequest, info combtype.PageInfo) pagePaginationOut {
	out := pagePaginationOut{Limit: p.Limit, Offset: p.Offset}
	if info.Total >= 0 {
		out.Total = &info.Total
	}
	if info.Next != "" {
		out.Next = &info.Next
	}
	return out
}
