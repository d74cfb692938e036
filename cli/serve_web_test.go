package cli

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// get sends GET url with Host and Origin (empty for the defaults) and
// returns the status and the Access-Control-Allow-Origin it was answered.
func get(t *testing.T, url, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin")
}

func TestServeRefusesForeignOriginsAndHostsWithoutAuth(t *testing.T) {
	base, logs := serveForTest(t, map[string]string{"COMB_CORS_ORIGINS": "http://127.0.0.1:5173", "COMB_ALLOWED_HOSTS": "comb.test"},
		"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "comb.db"))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	for _, tc := range []struct {
		host, origin string
		status       int
		allow        string
	}{
		{"", "", http.StatusOK, ""},
		{"localhost:" + port, "", http.StatusOK, ""},
		{"[::1]:" + port, "", http.StatusOK, ""},
		{"comb.test:" + port, "", http.StatusOK, ""},
		{"", "http://127.0.0.1:5173", http.StatusOK, "http://127.0.0.1:5173"},
		{"", base, http.StatusOK, base},
		{"", "http://127.0.0.1:5174", http.StatusForbidden, ""},
		{"evil.example:6632", "", http.StatusForbidden, ""},
	} {
		if status, allow := get(t, base+"/api/v1/resources/queues", tc.host, tc.origin); status != tc.status || allow != tc.allow {
			t.Errorf("Host %q Origin %q: %d, Allow-Origin %q; want %d, %q\n%s", tc.host, tc.origin, status, allow, tc.status, tc.allow, logs)
		}
	}
}

func TestServeOnIPv6LoopbackServesItsOwnNames(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	ln.Close()
	base, _ := serveForTest(t, nil, "--addr", "[::1]:0", "--db", filepath.Join(t.TempDir(), "comb.db"))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	for _, host := range []string{"", "localhost:" + port, "127.0.0.1:" + port} {
		if status, _ := get(t, base+"/health", host, ""); status != http.StatusOK {
			t.Errorf("Host %q: %d", host, status)
		}
	}
	if status, _ := get(t, base+"/health", "evil.example:"+port, ""); status != http.StatusForbidden {
		t.Errorf("Host evil.example: %d, want 403", status)
	}
}

func TestServeWithAuthGrantsEveryOriginUnlessListed(t *testing.T) {
	env := map[string]string{"JWT_SECRET": strings.Repeat("k", 32)}
	base, _ := serveForTest(t, env, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "a.db"))
	if status, allow := get(t, base+"/health", "", "https://dashboard.example"); status != http.StatusOK || allow != "*" {
		t.Errorf("default with auth: %d, Allow-Origin %q", status, allow)
	}
	base, _ = serveForTest(t, env, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "b.db"), "--cors-origins", "https://dashboard.example")
	if status, allow := get(t, base+"/health", "", "https://dashboard.example"); status != http.StatusOK || allow != "https://dashboard.example" {
		t.Errorf("listed origin: %d, Allow-Origin %q", status, allow)
	}
	if status, _ := get(t, base+"/health", "", "https://other.example"); status != http.StatusForbidden {
		t.Errorf("unlisted origin: %d, want 403", status)
	}
}

func TestServeWebFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"any origin without auth": {nil, []string{"--cors-origins", "*"}},
		"any origin from env":     {map[string]string{"COMB_CORS_ORIGINS": "http://a.example, *"}, nil},
		"origin without scheme":   {nil, []string{"--cors-origins", "dashboard.example"}},
		"origin with a path":      {nil, []string{"--cors-origins", "https://dashboard.example/app"}},
		"host with a port":        {nil, []string{"--allowed-hosts", "comb.test:6632"}},
		"host as a URL":           {map[string]string{"COMB_ALLOWED_HOSTS": "http://comb.test"}, nil},
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
