// Package authtest mints JWTs and key files for tests: fresh keys per test,
// tokens signed with any of them, and the PEM and JWKS files the server
// reads its public keys from.
package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Keys is one set of signing keys of every supported kind.
type Keys struct {
	Secret  []byte
	RSA     *rsa.PrivateKey
	EC      *ecdsa.PrivateKey
	Ed25519 ed25519.PrivateKey
}

// NewKeys generates a fresh secret, RSA-2048, P-256 and Ed25519 key.
func NewKeys(tb testing.TB) *Keys {
	tb.Helper()
	k := &Keys{Secret: make([]byte, 32)}
	rand.Read(k.Secret)
	var err error
	if k.RSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		tb.Fatalf("rsa key: %v", err)
	}
	if k.EC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		tb.Fatalf("ec key: %v", err)
	}
	if _, k.Ed25519, err = ed25519.GenerateKey(rand.Reader); err != nil {
		tb.Fatalf("ed25519 key: %v", err)
	}
	return k
}

// Claims are the claims of a test token valid for an hour, shaped like the
// ones Queen's proxy issues: {sub, username, role, iat, exp}, plus tenant
// when non-empty. An empty role leaves the claim out.
func Claims(sub, role, tenant string) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"sub": sub, "username": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if role != "" {
		c["role"] = role
	}
	if tenant != "" {
		c["tenant"] = tenant
	}
	return c
}

// Sign signs claims with method and key, setting kid in the header when
// non-empty.
func Sign(tb testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	tb.Helper()
	t := jwt.NewWithClaims(method, claims)
	if kid != "" {
		t.Header["kid"] = kid
	}
	s, err := t.SignedString(key)
	if err != nil {
		tb.Fatalf("sign %s token: %v", method.Alg(), err)
	}
	return s
}

// HS256 signs claims with the shared secret.
func (k *Keys) HS256(tb testing.TB, claims jwt.MapClaims) string {
	tb.Helper()
	return Sign(tb, jwt.SigningMethodHS256, k.Secret, "", claims)
}

// Unsigned is a token with alg "none" and an empty signature, the classic
// forgery a verifier must refuse.
func Unsigned(claims jwt.MapClaims) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// Bearer is an Authorization header carrying token.
func Bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// PublicPEM encodes pub as a PKIX "PUBLIC KEY" block.
func PublicPEM(tb testing.TB, pub crypto.PublicKey) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatalf("marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// JWK is one key of a key set: a public key and its kid.
type JWK struct {
	ID  string
	Key crypto.PublicKey
}

// JWKS encodes keys as a JSON Web Key Set.
func JWKS(tb testing.TB, keys ...JWK) []byte {
	tb.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	var out []map[string]string
	for _, k := range keys {
		m := map[string]string{"kid": k.ID, "use": "sig"}
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			m["kty"], m["n"], m["e"] = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
		case *ecdsa.PublicKey:
			size := (pub.Curve.Params().BitSize + 7) / 8
			raw, err := pub.Bytes()
			if err != nil {
				tb.Fatalf("ec public key: %v", err)
			}
			m["kty"], m["crv"] = "EC", pub.Curve.Params().Name
			m["x"], m["y"] = b64(raw[1:1+size]), b64(raw[1+size:])
		case ed25519.PublicKey:
			m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(pub)
		default:
			tb.Fatalf("jwks: unsupported key %T", k.Key)
		}
		out = append(out, m)
	}
	b, err := json.Marshal(map[string]any{"keys": out})
	if err != nil {
		tb.Fatalf("encode jwks: %v", err)
	}
	return b
}

// Tamper flips one character of the token's signature.
func Tamper(token string) string {
	i := strings.LastIndexByte(token, '.') + 1
	if i >= len(token) {
		panic(fmt.Sprintf("authtest: token %q has no signature", token))
	}
	c := byte('A')
	if token[i] == 'A' {
		c = 'B'
	}
	return token[:i] + string(c) + token[i+1:]
}
