package cli

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/comb-broker/comb/httpd"
)

// authFlags are serve's token-verification flags. The environment names
// are Queen's, so one deployment file configures either broker.
type authFlags struct {
	secret, publicKey, jwksFile  string
	issuer, audience             string
	leeway                       time.Duration
	tenantClaim                  string
	roleClaim, rolesClaim        string
	adminRoles, rwRoles, roRoles string
	enabled                      bool
	allowInsecureBind            bool
}

func (m *App) authFlags(fs *flag.FlagSet) *authFlags {
	a := &authFlags{}
	fs.StringVar(&a.secret, "jwt-secret", m.Getenv("JWT_SECRET"), "HS256 shared secret; enables auth (env JWT_SECRET, preferred: flags show in ps)")
	fs.StringVar(&a.publicKey, "jwt-public-key", m.Getenv("JWT_PUBLIC_KEY"), "PEM file of public keys (RSA, EC, Ed25519) or the PEM text itself; enables auth (env JWT_PUBLIC_KEY)")
	fs.StringVar(&a.jwksFile, "jwks-file", m.Getenv("JWT_JWKS_FILE"), "local JSON Web Key Set file, keys chosen by kid; enables auth (env JWT_JWKS_FILE)")
	fs.StringVar(&a.issuer, "jwt-issuer", m.Getenv("JWT_ISSUER"), "required token iss, empty for any (env JWT_ISSUER)")
	fs.StringVar(&a.audience, "jwt-audience", m.Getenv("JWT_AUDIENCE"), "required token aud, empty for any (env JWT_AUDIENCE)")
	fs.DurationVar(&a.leeway, "jwt-leeway", envSeconds(m.Getenv("JWT_CLOCK_SKEW"), httpd.DefaultLeeway), "clock skew allowed on exp, nbf and iat (env JWT_CLOCK_SKEW, seconds)")
	fs.StringVar(&a.tenantClaim, "tenant-claim", m.env("JWT_TENANT_CLAIM", httpd.DefaultTenantClaim), "string claim naming the tenant; absent = default tenant (env JWT_TENANT_CLAIM)")
	fs.StringVar(&a.roleClaim, "role-claim", m.env("JWT_ROLES_CLAIM", httpd.DefaultRoleClaim), "string claim holding one role (env JWT_ROLES_CLAIM)")
	fs.StringVar(&a.rolesClaim, "roles-claim", m.env("JWT_ROLES_ARRAY_CLAIM", httpd.DefaultRolesClaim), "array claim holding roles (env JWT_ROLES_ARRAY_CLAIM)")
	fs.StringVar(&a.adminRoles, "admin-roles", m.env("JWT_ROLE_ADMIN", httpd.DefaultAdminRole), "comma-separated role names granting admin (env JWT_ROLE_ADMIN)")
	fs.StringVar(&a.rwRoles, "read-write-roles", m.env("JWT_ROLE_READ_WRITE", httpd.DefaultReadWriteRole), "comma-separated role names granting read-write (env JWT_ROLE_READ_WRITE)")
	fs.StringVar(&a.roRoles, "read-only-roles", m.env("JWT_ROLE_READ_ONLY", httpd.DefaultReadOnlyRole), "comma-separated role names granting read-only (env JWT_ROLE_READ_ONLY)")
	a.enabled = envBool(m.Getenv("JWT_ENABLED"))
	fs.BoolVar(&a.allowInsecureBind, "allow-insecure-bind", envBool(m.Getenv("COMB_ALLOW_INSECURE_BIND")), "serve a non-loopback address without auth (env COMB_ALLOW_INSECURE_BIND=1)")
	return a
}

func envBool(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

func envSeconds(v string, def time.Duration) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// authenticator builds the verifier the flags describe; nil when no key is
// configured, which leaves auth off.
func (a *authFlags) authenticator(log *slog.Logger) (*httpd.Authenticator, error) {
	cfg := httpd.AuthConfig{
		Secret: []byte(a.secret), Issuer: a.issuer, Audience: a.audience, Leeway: a.leeway,
		TenantClaim: a.tenantClaim, RoleClaim: a.roleClaim, RolesClaim: a.rolesClaim,
		AdminRoles: splitList(a.adminRoles), ReadWriteRoles: splitList(a.rwRoles), ReadOnlyRoles: splitList(a.roRoles),
	}
	if a.leeway == 0 {
		cfg.Leeway = -1 // an explicit 0 means no skew, not the default
	}
	if a.publicKey != "" {
		data := []byte(a.publicKey)
		if !strings.HasPrefix(strings.TrimSpace(a.publicKey), "-----BEGIN") {
			var err error
			if data, err = os.ReadFile(a.publicKey); err != nil {
				return nil, fmt.Errorf("jwt public key: %w", err)
			}
		}
		keys, err := httpd.ParsePublicKeysPEM(data)
		if err != nil {
			return nil, fmt.Errorf("jwt public key: %w", err)
		}
		cfg.Keys = append(cfg.Keys, keys...)
	}
	if a.jwksFile != "" {
		data, err := os.ReadFile(a.jwksFile)
		if err != nil {
			return nil, fmt.Errorf("jwks file: %w", err)
		}
		keys, err := httpd.ParseJWKS(data)
		if err != nil {
			return nil, fmt.Errorf("jwks file %s: %w", a.jwksFile, err)
		}
		cfg.Keys = append(cfg.Keys, keys...)
	}
	if len(cfg.Secret) == 0 && len(cfg.Keys) == 0 {
		if a.enabled {
			return nil, errors.New("JWT_ENABLED is set but no --jwt-secret, --jwt-public-key or --jwks-file is configured")
		}
		return nil, nil
	}
	if n := len(cfg.Secret); n > 0 && n < 32 {
		log.Warn("jwt secret is shorter than 32 bytes; HS256 wants at least 256 bits of key", "bytes", n)
	}
	auth, err := httpd.NewAuthenticator(cfg)
	if err != nil {
		return nil, err
	}
	log.Info("jwt auth enabled", "algorithms", strings.Join(auth.Methods(), ","), "issuer", a.issuer,
		"audience", a.audience, "tenantClaim", a.tenantClaim)
	return auth, nil
}
