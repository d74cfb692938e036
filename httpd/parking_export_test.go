package httpd

import "time"

// TakenPops is how many pops wait outside net/http now, and IdleConns how
// many of their connections wait for their next request (parking.go).
func (s *Server) TakenPops() int {
	s.h.parking.mu.Lock()
	defer s.h.parking.mu.Unlock()
	return len(s.h.parking.held)
}

func (s *Server) IdleConns() int {
	s.h.parking.mu.Lock()
	defer s.h.parking.mu.Unlock()
	return len(s.h.parking.idleConns)
}

// SetIdleTimeout sets how long an answered connection may wait outside
// net/http for its next request.
func (s *Server) SetIdleTimeout(d time.Duration) { s.h.parking.idleFor = d }
