package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
)

func maintenanceJSON(st broker.MaintenanceState) map[string]any {
	return map[string]any{
		"maintenanceMode":    st.PushMaintenance,
		"popMaintenanceMode": st.PopMaintenance,
		"bufferedMessages":   st.Buffered,
		"bufferHealthy":      true,
		// The buffer is a table in the database: durable as the log, and
		// healthy whenever the database is.
		"bufferStats": map[string]any{"pending": st.Buffered, "failed": 0, "storage": "database"},
	}
}

func (s *Handler) getMaintenance(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	st, err := s.b.Maintenance(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, maintenanceJSON(st))
}

// readEnabled reads {"enabled": bool}; anything else is Queen's 400.
func (s *Handler) readEnabled(w http.ResponseWriter, r *http.Request) (bool, bool) {
	var in struct {
		Enabled json.RawMessage `json:"enabled"`
	}
	err := s.readJSON(w, r, &in)
	if err != nil && !errors.Is(err, errEmptyBody) {
		s.fail(w, r, err)
		return false, false
	}
	switch string(bytes.TrimSpace(in.Enabled)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	s.fail(w, r, &badRequest{"enabled (boolean) is required"})
	return false, false
}

func (s *Handler) setMaintenance(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	on, ok := s.readEnabled(w, r)
	if !ok {
		return
	}
	st, err := s.b.MaintenanceSetPush(r.Context(), on)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	msg := "Maintenance mode DISABLED. Buffered messages were drained to the log."
	if on {
		msg = "Maintenance mode ENABLED. All pushes are buffered until it is disabled."
	}
	writeJSON(w, http.StatusOK, map[string]any{"maintenanceMode": st.PushMaintenance, "bufferedMessages": st.Buffered,
		"bufferHealthy": true, "message": msg})
}

func popMaintenanceJSON(on bool) map[string]any {
	msg := "Pop maintenance mode is OFF. Normal operation."
	if on {
		msg = "Pop maintenance mode is ON. All POP operations return empty."
	}
	return map[string]any{"popMaintenanceMode": on, "message": msg}
}

func (s *Handler) getPopMaintenance(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	st, err := s.b.Maintenance(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, popMaintenanceJSON(st.PopMaintenance))
}

func (s *Handler) setPopMaintenance(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	on, ok := s.readEnabled(w, r)
	if !ok {
		return
	}
	st, err := s.b.MaintenanceSetPop(r.Context(), on)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, popMaintenanceJSON(st.PopMaintenance))
}

// sharedState answers Queen's cluster-sync probe: comb is one process.
func (s *Handler) sharedState(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	writeJSON(w, http.StatusOK, map[string]any{"enabled": false})
}
