package httpd

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// whoami answers the caller's access level and tenant, so a client (the
// console) can offer only the actions the token may take. Without auth every
// caller is admin of the default tenant.
func (s *Handler) whoami(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if s.cfg.Auth == nil {
		writeJSON(w, http.StatusOK, map[string]any{"auth": false, "level": Admin.String(), "tenant": "", "subject": nil})
		return
	}
	// guard has verified this token already; verified tokens are cached, so
	// asking again costs a map lookup.
	id, err := s.cfg.Auth.Verify(r.Header.Get("Authorization"))
	if err != nil {
		s.fail(w, r, &unauthorized{"Invalid token"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"auth": true, "level": id.Level.String(), "tenant": id.Tenant,
		"subject": nullString(id.Subject)})
}
