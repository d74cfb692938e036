package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

// serveForTest runs `comb serve args...` with env until the test ends and
// returns its base URL and log.
func serveForTest(t *testing.T, env map[string]string, args ...string) (string, *combtest.Logs) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &combtest.Logs{}
	ready := make(chan string, 1)
	m := &App{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }, Ready: func(a string) { ready <- a }}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, append([]string{"serve"}, args...)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr, logs
	case err := <-done:
		done <- err
		t.Fatalf("serve exited: %v\n%s", err, logs)
	case <-time.After(10 * time.Second):
		t.Fatalf("serve not ready after 10s\n%s", logs)
	}
	return "", nil
}

func runServe(env map[string]string, args ...string) (string, error) {
	logs := &combtest.Logs{}
	m := &App{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := m.Run(ctx, append([]string{"serve"}, args...))
	return logs.String(), err
}

func request(t *testing.T, method, url, token, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeRefusesOpenNetworkWithoutAuth: without auth, serve binds only
// loopback unless told otherwise, and refuses before creating the database.
func TestServeRefusesOpenNetworkWithoutAuth(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.10:0"} {
		db := filepath.Join(t.TempDir(), "comb.db")
		logs, err := runServe(nil, "--addr", addr, "--db", db)
		if err == nil || !strings.Contains(err.Error(), "refusing to serve") || !strings.Contains(err.Error(), "--allow-insecure-bind") {
			t.Errorf("serve --addr %s without auth: %v\n%s", addr, err, logs)
		}
		if _, statErr := os.Stat(db); !os.IsNotExist(statErr) {
			t.Errorf("serve --addr %s refused but created the database (%v)", addr, statErr)
		}
	}
	// Auth off and bound to loopback: allowed.
	url, _ := serveForTest(t, nil, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "comb.db"))
	if got := request(t, "POST", url+"/api/v1/push", "", `{"items":[]}`); got != http.StatusCreated {
		t.Errorf("push to a loopback server without auth: %d", got)
	}
}

// TestAllowInsecureBindIsReadFromTheEnvironment: the override that lets
// httpd.Listen bind an open address without auth has an env form too.
func TestAllowInsecureBindIsReadFromTheEnvironment(t *testing.T) {
	c, _, err := parseServe(t, map[string]string{"COMB_ALLOW_INSECURE_BIND": "1"})
	if err != nil || !c.auth.allowInsecureBind {
		t.Errorf("COMB_ALLOW_INSECURE_BIND=1: err=%v", err)
	}
}

// TestServeWithAuth: the JWT flags and env reach the HTTP server; the
// database file is private to its owner.
func TestServeWithAuth(t *testing.T) {
	keys := authtest.NewKeys(t)
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, authtest.JWKS(t, authtest.JWK{ID: "k1", Key: keys.Ed25519.Public()}), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "comb.db")
	url, logs := serveForTest(t, map[string]string{"JWT_SECRET": string(keys.Secret), "JWT_TENANT_CLAIM": "org"},
		"--addr", "127.0.0.1:0", "--db", db, "--jwks-file", jwks,
		"--jwt-public-key", string(authtest.PublicPEM(t, &keys.RSA.PublicKey)), "--jwt-issuer", "https://idp.test")

	claims := func() jwt.MapClaims {
		c := authtest.Claims("svc", "read-write", "")
		c["iss"] = "https://idp.test"
		return c
	}
	if got := request(t, "POST", url+"/api/v1/push", "", `{"items":[]}`); got != http.StatusUnauthorized {
		t.Errorf("push without a token: %d, want 401", got)
	}
	for name, tok := range map[string]string{
		"HS256 from JWT_SECRET":    keys.HS256(t, claims()),
		"RS256 from PEM text":      authtest.Sign(t, jwt.SigningMethodRS256, keys.RSA, "", claims()),
		"EdDSA from --jwks-file":   authtest.Sign(t, jwt.SigningMethodEdDSA, keys.Ed25519, "k1", claims()),
		"issuer from --jwt-issuer": keys.HS256(t, func() jwt.MapClaims { c := claims(); c["iss"] = "x"; return c }()),
	} {
		want := http.StatusCreated
		if strings.HasPrefix(name, "issuer") {
			want = http.StatusUnauthorized
		}
		if got := request(t, "POST", url+"/api/v1/push", tok, `{"items":[]}`); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	if got := request(t, "GET", url+"/health", "", ""); got != http.StatusOK {
		t.Errorf("health without a token: %d", got)
	}
	if !strings.Contains(logs.String(), "jwt auth enabled") {
		t.Errorf("no auth line in the log:\n%s", logs)
	}

	// The tenant claim name came from JWT_TENANT_CLAIM: a token naming
	// org "acme" does not see the default tenant's queue.
	c := claims()
	tok := keys.HS256(t, c)
	if got := request(t, "POST", url+"/api/v1/push", tok, `{"items":[{"queue":"q","payload":{}}]}`); got != http.StatusCreated {
		t.Fatalf("push: %d", got)
	}
	c["org"] = "acme"
	if got := request(t, "GET", url+"/api/v1/pop/queue/q", keys.HS256(t, c), ""); got != http.StatusNoContent {
		t.Errorf("pop of another tenant's queue: %d, want 204", got)
	}
	if got := request(t, "GET", url+"/api/v1/pop/queue/q", tok, ""); got != http.StatusOK {
		t.Errorf("pop of the default tenant's queue: %d, want 200", got)
	}

	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		st, err := os.Stat(f)
		if os.IsNotExist(err) && f != db {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v; others may read the queues", filepath.Base(f), perm)
		}
	}
}

// TestServeAuthConfigErrors: a key that cannot be used stops serve before
// it listens, and JWT_ENABLED without a key is an error, not open access.
func TestServeAuthConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), 0o644)
	jwks, _ := json.Marshal(map[string]any{"keys": []any{}})
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, jwks, 0o644)
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"JWT_ENABLED without key": {map[string]string{"JWT_ENABLED": "true"}, nil},
		"missing jwks file":       {nil, []string{"--jwks-file", filepath.Join(dir, "nope.json")}},
		"symmetric jwks":          {nil, []string{"--jwks-file", bad}},
		"empty jwks":              {nil, []string{"--jwks-file", empty}},
		"missing pem":             {map[string]string{"JWT_PUBLIC_KEY": filepath.Join(dir, "nope.pem")}, nil},
		"pem without a key":       {nil, []string{"--jwt-public-key", "-----BEGIN NOTHING-----\n-----END NOTHING-----\n"}},
	} {
		db := filepath.Join(dir, name+".db")
		logs, err := runServe(tc.env, append([]string{"--addr", "127.0.0.1:0", "--db", db}, tc.args...)...)
		if err == nil {
			t.Errorf("%s: serve started\n%s", name, logs)
		}
		if _, statErr := os.Stat(db); !os.IsNotExist(statErr) {
			t.Errorf("%s: refused but created the database", name)
		}
	}
}
