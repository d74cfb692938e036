package httpd_test

import (
	"net/http"
	"testing"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

func TestWhoamiAnswersTheTokensLevelTenantAndSubject(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	for _, c := range []struct{ sub, role, tenant string }{
		{"alice", "admin", "acme"}, {"bob", "read-write", ""}, {"carol", "read-only", "globex"},
	} {
		r := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims(c.sub, c.role, c.tenant)))).Do("GET", "/api/v1/whoami", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.role, r.Status, r.Body)
		}
		m := r.Map(t)
		if m["auth"] != true || m["level"] != c.role || m["tenant"] != c.tenant || m["subject"] != c.sub {
			t.Fatalf("whoami as %+v = %s", c, r.Body)
		}
	}
	if r := srv.Do("GET", "/api/v1/whoami", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", r.Status)
	}
	noRole := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("dee", "", ""))))
	if r := noRole.Do("GET", "/api/v1/whoami", nil); r.Status != http.StatusForbidden {
		t.Fatalf("token without a role: %d, want 403", r.Status)
	}
}

func TestWhoamiWithoutAuthIsAdminOfTheDefaultTenant(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	r := srv.Do("GET", "/api/v1/whoami", nil)
	m := r.Map(t)
	if r.Status != http.StatusOK || m["auth"] != false || m["level"] != "admin" || m["tenant"] != "" || m["subject"] != nil {
		t.Fatalf("whoami without auth: %d %s", r.Status, r.Body)
	}
}
