package httpd

// operatorRoutes registers the operator's routes: the dead-letter queue,
// resources, message reads, status and metrics.
func (s *Server) operatorRoutes() {
	s.handle("GET", "/api/v1/dlq", s.listDLQ)
	s.handle("POST", "/api/v1/dlq/redrive", s.redriveDLQ)
}
