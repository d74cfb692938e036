package httpd_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
)

// TestOnlyADefaultTenantAdminMayDownloadABackup: the file holds every
// tenant's queues, so neither a lesser role nor another tenant's admin gets it.
func TestOnlyADefaultTenantAdminMayDownloadABackup(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	for _, c := range []struct {
		role, tenant string
		want         int
	}{
		{"read-write", "", http.StatusForbidden},
		{"admin", "acme", http.StatusForbidden},
		{"admin", "", http.StatusOK},
	} {
		cl := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("op", c.role, c.tenant))))
		r := cl.Do("GET", "/api/v1/system/backup", nil)
		if r.Status != c.want {
			t.Errorf("%s of tenant %q: %d %.80s, want %d", c.role, c.tenant, r.Status, r.Body, c.want)
			continue
		}
		if c.want == http.StatusOK && !bytes.HasPrefix(r.Body, []byte("SQLite format 3\x00")) {
			t.Errorf("backup body is not a SQLite file: %.32q", r.Body)
		}
	}
}
