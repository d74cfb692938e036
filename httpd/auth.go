package httpd

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/julienschmidt/httprouter"
)

// DefaultLeeway is the clock skew allowed on exp, nbf and iat, as Queen allows.
const DefaultLeeway = 30 * time.Second

// Default claim and role names, as Queen and its proxy issue them.
const (
	DefaultTenantClaim   = "tenant"
	DefaultRoleClaim     = "role"
	DefaultRolesClaim    = "roles"
	DefaultAdminRole     = "admin"
	DefaultReadWriteRole = "read-write"
	DefaultReadOnlyRole  = "read-only"
)

// minRSABits is the smallest RSA modulus accepted as a verification key;
// shorter keys are factorable and would let anyone mint tokens.
const minRSABits = 2048

// AuthConfig configures bearer-token verification. At least one of Secret
// and Keys must be set; with both, a token's alg picks which one checks it.
type AuthConfig struct {
	// Secret is the HS256 shared secret. Empty: HS tokens are refused.
	Secret []byte
	// Keys verify RS*, PS*, ES* and EdDSA tokens. A key with an ID only
	// checks tokens naming that kid; a key without one checks any token
	// whose kid matches no other key. Empty: asymmetric tokens are refused.
	Keys []VerifyKey
	// Issuer, if set, must equal the token's iss.
	Issuer string
	// Audience, if set, must be among the token's aud.
	Audience string
	// Leeway is the clock skew allowed on exp, nbf and iat. Default
	// DefaultLeeway; negative means none.
	Leeway time.Duration
	// TenantClaim names the string claim holding the tenant. Default
	// DefaultTenantClaim. A token without it acts for the default tenant "".
	TenantClaim string
	// RoleClaim names the string claim holding one role; RolesClaim the
	// array claim holding several. Defaults DefaultRoleClaim, DefaultRolesClaim.
	RoleClaim, RolesClaim string
	// AdminRoles, ReadWriteRoles and ReadOnlyRoles are the role names
	// granting each level, compared exactly. Each defaults to its canonical
	// name; setting one replaces that default.
	AdminRoles, ReadWriteRoles, ReadOnlyRoles []string
	// Now is the clock for exp/nbf/iat. Default time.Now.
	Now func() time.Time
}

// VerifyKey is a public key that signs tokens.
type VerifyKey struct {
	// ID is the JWKS kid; "" for a key from a PEM file.
	ID string
	// Key is an *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey.
	Key crypto.PublicKey
	// Alg, if set, is the one algorithm this key may verify (the JWKS alg).
	Alg string
}

// algorithms lists what k may verify. Tying algorithms to the key type is
// what refuses alg confusion: an HS256 token can never be checked against
// an RSA key's bytes, nor an RS256 token against the HMAC secret.
func (k VerifyKey) algorithms() ([]string, error) {
	var algs []string
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		if key.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("rsa key %q: %d bits, want at least %d", k.ID, key.N.BitLen(), minRSABits)
		}
		algs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case *ecdsa.PublicKey:
		switch key.Curve {
		case elliptic.P256():
			algs = []string{"ES256"}
		case elliptic.P384():
			algs = []string{"ES384"}
		case elliptic.P521():
			algs = []string{"ES512"}
		default:
			return nil, fmt.Errorf("ec key %q: unsupported curve", k.ID)
		}
	case ed25519.PublicKey:
		algs = []string{"EdDSA"}
	default:
		return nil, fmt.Errorf("key %q: unsupported type %T", k.ID, k.Key)
	}
	if k.Alg == "" {
		return algs, nil
	}
	if !slices.Contains(algs, k.Alg) {
		return nil, fmt.Errorf("key %q: alg %s does not fit a %T", k.ID, k.Alg, k.Key)
	}
	return []string{k.Alg}, nil
}

// Identity is what a verified token says about its bearer.
type Identity struct {
	Subject string // sub; stamped on pushed messages as producerSub
	Tenant  string // from the tenant claim; "" = default tenant
	Level   Level  // highest level any of its roles grants; Public if none
}

// Authenticator verifies bearer tokens. It is safe for concurrent use.
type Authenticator struct {
	cfg     AuthConfig
	parser  *jwt.Parser
	methods []string
	keys    []keyEntry
	roles   map[string]Level

	// SDKs send the same token on every request, and checking an RSA or
	// ECDSA signature costs 40-90 µs, more than a small request itself. A
	// token that verified once is remembered until it expires, keyed by
	// its hash: the same bytes always verify the same way, since the keys
	// and rules never change after start. Refusals are not remembered.
	mu       sync.Mutex
	verified map[[sha256.Size]byte]verifiedToken
}

type verifiedToken struct {
	id    Identity
	until time.Time
}

// Cache bounds: distinct live tokens remembered, and how long one token
// is trusted without a fresh check even if it never expires.
const (
	maxVerifiedTokens = 4096
	maxVerifiedFor    = 5 * time.Minute
)

type keyEntry struct {
	VerifyKey
	algs []string
}

// NewAuthenticator checks cfg and returns its verifier.
func NewAuthenticator(cfg AuthConfig) (*Authenticator, error) {
	if len(cfg.Secret) == 0 && len(cfg.Keys) == 0 {
		return nil, errors.New("auth: no secret and no public key configured")
	}
	cfg.TenantClaim = cmp.Or(cfg.TenantClaim, DefaultTenantClaim)
	cfg.RoleClaim = cmp.Or(cfg.RoleClaim, DefaultRoleClaim)
	cfg.RolesClaim = cmp.Or(cfg.RolesClaim, DefaultRolesClaim)
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	}
	cfg.Leeway = max(cfg.Leeway, 0)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Authenticator{cfg: cfg, roles: map[string]Level{}, verified: map[[sha256.Size]byte]verifiedToken{}}

	if len(cfg.Secret) > 0 {
		a.methods = append(a.methods, "HS256")
	}
	for _, k := range cfg.Keys {
		algs, err := k.algorithms()
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		a.keys = append(a.keys, keyEntry{k, algs})
		for _, alg := range algs {
			if !slices.Contains(a.methods, alg) {
				a.methods = append(a.methods, alg)
			}
		}
	}

	// Lowest first, so a name listed under two levels grants the higher.
	for _, g := range []struct {
		names []string
		def   string
		level Level
	}{
		{cfg.ReadOnlyRoles, DefaultReadOnlyRole, ReadOnly},
		{cfg.ReadWriteRoles, DefaultReadWriteRole, ReadWrite},
		{cfg.AdminRoles, DefaultAdminRole, Admin},
	} {
		names := g.names
		if len(names) == 0 {
			names = []string{g.def}
		}
		for _, n := range names {
			if n = strings.TrimSpace(n); n != "" {
				a.roles[n] = g.level
			}
		}
	}

	opts := []jwt.ParserOption{
		jwt.WithValidMethods(a.methods),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(cfg.Now),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	a.parser = jwt.NewParser(opts...)
	return a, nil
}

// Methods lists the signing algorithms this authenticator accepts.
func (a *Authenticator) Methods() []string { return slices.Clone(a.methods) }

// AuthError is a refused token; its text is what the client is told.
type AuthError struct {
	Msg string
	Err error
}

func (e *AuthError) Error() string { return e.Msg }
func (e *AuthError) Unwrap() error { return e.Err }

// errNoToken is a request without credentials.
var errNoToken = &AuthError{Msg: "Authentication required"}

var errUnknownKID = errors.New("unknown key id")

// Verify checks a token (with or without its "Bearer " prefix) and returns
// who it names. Errors are *AuthError.
func (a *Authenticator) Verify(token string) (Identity, error) {
	token = bearerToken(token)
	if token == "" {
		return Identity{}, errNoToken
	}
	sum := sha256.Sum256([]byte(token))
	now := a.cfg.Now()
	a.mu.Lock()
	v, ok := a.verified[sum]
	a.mu.Unlock()
	if ok && now.Before(v.until) {
		return v.id, nil
	}
	id, until, err := a.verify(token, now)
	if err != nil {
		return Identity{}, err
	}
	a.mu.Lock()
	if len(a.verified) >= maxVerifiedTokens {
		for k, v := range a.verified {
			if !now.Before(v.until) {
				delete(a.verified, k)
			}
		}
		if len(a.verified) >= maxVerifiedTokens {
			clear(a.verified)
		}
	}
	a.verified[sum] = verifiedToken{id: id, until: until}
	a.mu.Unlock()
	return id, nil
}

// verify checks a token in full and returns who it names and until when
// that answer holds: exp plus leeway, at most maxVerifiedFor from now.
func (a *Authenticator) verify(token string, now time.Time) (Identity, time.Time, error) {
	claims := jwt.MapClaims{}
	tok, err := a.parser.ParseWithClaims(token, claims, a.keyFor)
	if err != nil {
		return Identity{}, time.Time{}, &AuthError{Msg: a.reason(tok, claims, err), Err: err}
	}
	until := now.Add(maxVerifiedFor)
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		if e := exp.Add(a.cfg.Leeway); e.Before(until) {
			until = e
		}
	}
	id := Identity{Level: Public}
	if sub, ok := claims["sub"]; ok {
		s, isString := sub.(string)
		if !isString {
			return Identity{}, time.Time{}, &AuthError{Msg: "Invalid token: sub must be a string"}
		}
		id.Subject = s
	}
	if t, ok := claims[a.cfg.TenantClaim]; ok && t != nil {
		s, isString := t.(string)
		if !isString {
			return Identity{}, time.Time{}, &AuthError{Msg: fmt.Sprintf("Invalid token: %s must be a string", a.cfg.TenantClaim)}
		}
		id.Tenant = s
	}
	// A role of the wrong type is ignored rather than refused, as Queen
	// does: the token is genuine, it just grants nothing through that claim.
	if r, ok := claims[a.cfg.RoleClaim].(string); ok {
		id.Level = max(id.Level, a.roles[r])
	}
	if rs, ok := claims[a.cfg.RolesClaim].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				id.Level = max(id.Level, a.roles[s])
			}
		}
	}
	return id, until, nil
}

// bearerToken strips a case-insensitive "Bearer " prefix; the prefix is
// optional because some clients send the bare token.
func bearerToken(h string) string {
	h = strings.TrimSpace(h)
	if len(h) >= len("Bearer") && strings.EqualFold(h[:len("Bearer")], "Bearer") &&
		(len(h) == len("Bearer") || h[len("Bearer")] == ' ' || h[len("Bearer")] == '\t') {
		h = strings.TrimSpace(h[len("Bearer"):])
	}
	return h
}

// keyFor picks the verification keys for a token whose alg the parser has
// already checked against the accepted methods.
func (a *Authenticator) keyFor(t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	if alg == "HS256" {
		if len(a.cfg.Secret) == 0 {
			return nil, fmt.Errorf("no secret for %s", alg)
		}
		return a.cfg.Secret, nil
	}
	kid, _ := t.Header["kid"].(string)
	var exact, anyKID []jwt.VerificationKey
	for _, k := range a.keys {
		if !slices.Contains(k.algs, alg) {
			continue
		}
		switch {
		case kid != "" && k.ID == kid:
			exact = append(exact, k.Key)
		case k.ID == "" || kid == "":
			anyKID = append(anyKID, k.Key)
		}
	}
	if len(exact) > 0 {
		return jwt.VerificationKeySet{Keys: exact}, nil
	}
	if len(anyKID) > 0 {
		return jwt.VerificationKeySet{Keys: anyKID}, nil
	}
	if kid != "" {
		return nil, fmt.Errorf("%w %q", errUnknownKID, kid)
	}
	return nil, fmt.Errorf("no key for %s", alg)
}

// reason is the client-facing text of a refused token.
func (a *Authenticator) reason(tok *jwt.Token, claims jwt.MapClaims, err error) string {
	if tok != nil && tok.Method != nil && !slices.Contains(a.methods, tok.Method.Alg()) {
		return "Invalid token: algorithm " + tok.Method.Alg() + " is not accepted"
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "Invalid token: malformed"
	case errors.Is(err, errUnknownKID):
		kid, _ := tok.Header["kid"].(string)
		return "Invalid token: unknown key ID " + kid
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "Invalid token: unsupported algorithm"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "Invalid token signature"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "Token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "Token is not valid yet"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "Token used before issued"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "Invalid token issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "Invalid token audience"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// Only iss and aud are ever required, and only when configured.
		if _, ok := claims["iss"]; !ok && a.cfg.Issuer != "" {
			return "Invalid token issuer"
		}
		return "Invalid token audience"
	case errors.Is(err, jwt.ErrInvalidType):
		return "Invalid token: a registered claim has the wrong type"
	}
	return "Invalid token"
}

// guard wraps h with the access check of its level. Public routes and a
// server without an Authenticator pass straight through. The check runs
// in a function of its own: the wrapper's frame stays on the stack of a
// parked pop while it waits (see broker.Broker.Pop).
func (s *Handler) guard(level Level, h httprouter.Handle) httprouter.Handle {
	auth := s.cfg.Auth
	if auth == nil || level == Public {
		return h
	}
	trustUnix := s.cfg.TrustUnixPeers
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if trustUnix && arrivedOnUnix(r) {
			// The socket file's mode decides who may connect at all; a
			// peer that could is the owner's own process (docs/auth.md).
			h(w, r, ps)
			return
		}
		if r = s.authorize(w, r, auth, level); r != nil {
			h(w, r, ps)
		}
	}
}

// authorize verifies r's bearer token for level and returns r carrying
// the caller's tenant and subject, or answers 401 or 403 and returns nil.
func (s *Handler) authorize(w http.ResponseWriter, r *http.Request, auth *Authenticator, level Level) *http.Request {
	id, err := auth.Verify(r.Header.Get("Authorization"))
	if err != nil {
		var ae *AuthError
		msg := "Invalid token"
		if errors.As(err, &ae) {
			msg = ae.Msg
		}
		challenge := `Bearer realm="comb"`
		if err != errNoToken {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		s.fail(w, r, &unauthorized{msg})
		return nil
	}
	if id.Level < level {
		s.fail(w, r, &forbidden{"Insufficient permissions"})
		return nil
	}
	ctx := context.WithValue(r.Context(), tenantKey{}, id.Tenant)
	if id.Subject != "" {
		ctx = context.WithValue(ctx, subjectKey{}, id.Subject)
	}
	return r.WithContext(ctx)
}

// ParsePublicKeysPEM reads every public key in PEM data: PUBLIC KEY (PKIX:
// RSA, EC or Ed25519), RSA PUBLIC KEY (PKCS #1) or CERTIFICATE blocks.
func ParsePublicKeysPEM(data []byte) ([]VerifyKey, error) {
	var keys []VerifyKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var (
			key crypto.PublicKey
			err error
		)
		switch block.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				key = cert.PublicKey
			}
		default:
			// Private keys in particular: refuse rather than derive, so a
			// signing key never ends up on the broker by mistake.
			return nil, fmt.Errorf("pem: unexpected %s block, want a public key", block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("pem %s: %w", block.Type, err)
		}
		k := VerifyKey{Key: key}
		if _, err := k.algorithms(); err != nil {
			return nil, fmt.Errorf("pem: %w", err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("pem: no public key found")
	}
	return keys, nil
}

// ParseJWKS reads a JSON Web Key Set (RFC 7517): RSA, EC (P-256/384/521)
// and OKP (Ed25519) public keys. Keys meant only for encryption are
// skipped; symmetric and private keys are refused.
func ParseJWKS(data []byte) ([]VerifyKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
			D   string `json:"d"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	var keys []VerifyKey
	for i, j := range set.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		if j.D != "" {
			return nil, fmt.Errorf("jwks key %d (%q): holds a private key", i, j.Kid)
		}
		k := VerifyKey{ID: j.Kid, Alg: j.Alg}
		var err error
		switch j.Kty {
		case "RSA":
			k.Key, err = jwkRSA(j.N, j.E)
		case "EC":
			k.Key, err = jwkEC(j.Crv, j.X, j.Y)
		case "OKP":
			if j.Crv != "Ed25519" {
				err = fmt.Errorf("unsupported OKP curve %q", j.Crv)
				break
			}
			var x []byte
			if x, err = b64(j.X); err == nil && len(x) != ed25519.PublicKeySize {
				err = fmt.Errorf("ed25519 key of %d bytes", len(x))
			}
			k.Key = ed25519.PublicKey(x)
		case "oct":
			err = errors.New("symmetric keys do not belong in a key set file; use the shared secret")
		default:
			err = fmt.Errorf("unsupported kty %q", j.Kty)
		}
		if err == nil {
			_, err = k.algorithms()
		}
		if err != nil {
			return nil, fmt.Errorf("jwks key %d (%q): %w", i, j.Kid, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("jwks: no signing key found")
	}
	return keys, nil
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func jwkRSA(n64, e64 string) (*rsa.PublicKey, error) {
	n, err := b64(n64)
	if err != nil || len(n) == 0 {
		return nil, fmt.Errorf("rsa n: bad base64url")
	}
	e, err := b64(e64)
	if err != nil || len(e) == 0 || len(e) > 4 {
		return nil, fmt.Errorf("rsa e: bad base64url")
	}
	exp := 0
	for _, b := range e {
		exp = exp<<8 | int(b)
	}
	if exp < 3 || exp%2 == 0 {
		return nil, fmt.Errorf("rsa e: %d is not a valid exponent", exp)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}, nil
}

func jwkEC(crv, x64, y64 string) (*ecdsa.PublicKey, error) {
	var c elliptic.Curve
	switch crv {
	case "P-256":
		c = elliptic.P256()
	case "P-384":
		c = elliptic.P384()
	case "P-521":
		c = elliptic.P521()
	default:
		return nil, fmt.Errorf("unsupported EC curve %q", crv)
	}
	x, errX := b64(x64)
	y, errY := b64(y64)
	size := (c.Params().BitSize + 7) / 8
	if errX != nil || errY != nil || len(x) != size || len(y) != size {
		return nil, fmt.Errorf("ec %s: bad coordinates", crv)
	}
	// Parsing the uncompressed point refuses points off the curve, which
	// a hostile key file could otherwise use to weaken verification.
	raw := append(append([]byte{4}, x...), y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(c, raw)
	if err != nil {
		return nil, fmt.Errorf("ec %s: %w", crv, err)
	}
	return pub, nil
}
