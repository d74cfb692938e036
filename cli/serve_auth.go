package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/spf13/pflag"
)

// authFlags are serve's token-verification flags. Their old environment
// names were Queen's (JWT_SECRET and the rest); those are still read, with
// a warning.
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

func (m *App) authFlags(fs *pflag.FlagSet) *authFlags {
	a := &authFlags{}
	fs.StringVar(&a.secret, "jwt-secret", "", "HS256 shared secret; enables auth (env COMB_JWT_SECRET, preferred: flags show in ps)")
	m.secret(fs, "jwt-secret", "JWT_SECRET")
	fs.StringVar(&a.publicKey, "jwt-public-key", "", "PEM file of public keys (RSA, EC, Ed25519) or the PEM text itself; enables auth (env COMB_JWT_PUBLIC_KEY)")
	m.setting(fs, "jwt-public-key", "JWT_PUBLIC_KEY")
	fs.StringVar(&a.jwksFile, "jwks-file", "", "local JSON Web Key Set file, keys chosen by kid; enables auth (env COMB_JWKS_FILE)")
	m.setting(fs, "jwks-file", "JWT_JWKS_FILE")
	fs.StringVar(&a.issuer, "jwt-issuer", "", "required token iss, empty for any (env COMB_JWT_ISSUER)")
	m.setting(fs, "jwt-issuer", "JWT_ISSUER")
	fs.StringVar(&a.audience, "jwt-audience", "", "required token aud, empty for any (env COMB_JWT_AUDIENCE)")
	m.setting(fs, "jwt-audience", "JWT_AUDIENCE")
	m.durationSetting(fs, &a.leeway, "jwt-leeway", httpd.DefaultLeeway, "JWT_CLOCK_SKEW", 0,
		"clock skew allowed on exp, nbf and iat (env COMB_JWT_LEEWAY)")
	_ = fs.SetAnnotation("jwt-leeway", annLegacyUnit, []string{"1s"}) // JWT_CLOCK_SKEW was seconds
	fs.StringVar(&a.tenantClaim, "tenant-claim", httpd.DefaultTenantClaim, "string claim naming the tenant; absent = default tenant (env COMB_TENANT_CLAIM)")
	m.setting(fs, "tenant-claim", "JWT_TENANT_CLAIM")
	fs.StringVar(&a.roleClaim, "role-claim", httpd.DefaultRoleClaim, "string claim holding one role (env COMB_ROLE_CLAIM)")
	m.setting(fs, "role-claim", "JWT_ROLES_CLAIM")
	fs.StringVar(&a.rolesClaim, "roles-claim", httpd.DefaultRolesClaim, "array claim holding roles (env COMB_ROLES_CLAIM)")
	m.setting(fs, "roles-claim", "JWT_ROLES_ARRAY_CLAIM")
	fs.StringVar(&a.adminRoles, "admin-roles", httpd.DefaultAdminRole, "comma-separated role names granting admin (env COMB_ADMIN_ROLES)")
	m.setting(fs, "admin-roles", "JWT_ROLE_ADMIN")
	fs.StringVar(&a.rwRoles, "read-write-roles", httpd.DefaultReadWriteRole, "comma-separated role names granting read-write (env COMB_READ_WRITE_ROLES)")
	m.setting(fs, "read-write-roles", "JWT_ROLE_READ_WRITE")
	fs.StringVar(&a.roRoles, "read-only-roles", httpd.DefaultReadOnlyRole, "comma-separated role names granting read-only (env COMB_READ_ONLY_ROLES)")
	m.setting(fs, "read-only-roles", "JWT_ROLE_READ_ONLY")
	fs.BoolVar(&a.enabled, "jwt-enabled", false, "refuse to start unless a key is configured (env COMB_JWT_ENABLED)")
	m.setting(fs, "jwt-enabled", "JWT_ENABLED")
	fs.BoolVar(&a.allowInsecureBind, "allow-insecure-bind", false, "serve a non-loopback address without auth (env COMB_ALLOW_INSECURE_BIND=true)")
	m.setting(fs, "allow-insecure-bind", "")
	return a
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
			return nil, errors.New("--jwt-enabled is set but no --jwt-secret, --jwt-public-key or --jwks-file is configured")
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
