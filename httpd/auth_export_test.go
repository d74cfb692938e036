package httpd

import "github.com/julienschmidt/httprouter"

// HandleForTest registers a route as routes() does, so a test can check
// that a route without an access level is refused.
func (s *Server) HandleForTest(method, path string, h httprouter.Handle) { s.handle(method, path, h) }
