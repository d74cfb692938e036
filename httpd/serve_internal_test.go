package httpd

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestCheckBind covers Listen's decision without binding the network: auth
// or loopback pass; otherwise only with the override, and with a warning.
func TestCheckBind(t *testing.T) {
	auth, err := NewAuthenticator(AuthConfig{Secret: bytes.Repeat([]byte("k"), 32)})
	if err != nil {
		t.Fatal(err)
	}
	public := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 6632}
	if err := checkBind(public, auth, false, nil); err != nil {
		t.Errorf("with auth: %v", err)
	}
	for _, ip := range []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 1, 2, 3), net.IPv6loopback} {
		if err := checkBind(&net.TCPAddr{IP: ip}, nil, false, nil); err != nil {
			t.Errorf("%v without auth: %v", ip, err)
		}
	}
	if err := checkBind(public, nil, false, nil); !errors.Is(err, ErrInsecureBind) || !strings.Contains(err.Error(), "192.0.2.10:6632") {
		t.Errorf("public address without auth: %v", err)
	}
	var logs bytes.Buffer
	if err := checkBind(public, nil, true, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Errorf("with AllowInsecureBind: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "without auth") {
		t.Errorf("no warning logged: %q", logs.String())
	}
}

func TestLiteralAddrNamesOnlyWhatNeedsNoLookup(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:6632": "127.0.0.1:0",
		"[::1]:0":        "[::1]:0",
		":6632":          "[::]:0",
		"0.0.0.0:1":      "0.0.0.0:0",
		"localhost:6632": "",
		"no-port":        "",
	} {
		got := literalAddr(addr)
		if (got == nil) != (want == "") || (got != nil && got.String() != want) {
			t.Errorf("literalAddr(%q) = %v, want %q", addr, got, want)
		}
	}
}
