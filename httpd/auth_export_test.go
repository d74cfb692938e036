package httpd

import "github.com/julienschmidt/httprouter"

// HandleForTest registers a route as New does its table's rows, but with
// no level, so a test can check that such a route is refused.
func (s *Handler) HandleForTest(method, path string, h httprouter.Handle) {
	s.handle(route{method: method, path: path, h: h})
}
