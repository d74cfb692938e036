package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// parseServe runs "comb serve args..." with env as the environment up to
// the point where it would serve, and returns its settings.
func parseServe(t *testing.T, env map[string]string, args ...string) (*serveConfig, *App, error) {
	t.Helper()
	var got *serveConfig
	m := &App{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] },
		parsed: func(c *serveConfig) error { got = c; return nil }}
	err := m.Run(context.Background(), append([]string{"serve"}, args...))
	return got, m, err
}

func TestRetentionFlags(t *testing.T) {
	key := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		interval time.Duration
		keyLen   int
		warn     string
		err      string
	}{
		{name: "defaults", interval: 5 * time.Minute},
		{name: "old env in milliseconds", env: map[string]string{"RETENTION_INTERVAL": "2000", "QUEEN_ENCRYPTION_KEY": key},
			interval: 2 * time.Second, keyLen: 32, warn: "RETENTION_INTERVAL is an old name"},
		{name: "env", env: map[string]string{"COMB_RETENTION_INTERVAL": "2s", "COMB_ENCRYPTION_KEY": key},
			interval: 2 * time.Second, keyLen: 32},
		{name: "flag beats env", env: map[string]string{"COMB_RETENTION_INTERVAL": "2s"}, args: []string{"--retention-interval", "500ms"},
			interval: 500 * time.Millisecond},
		{name: "old flag milliseconds", args: []string{"--retention-interval", "500"},
			interval: 500 * time.Millisecond, warn: "read as milliseconds"},
		{name: "zero disables", args: []string{"--retention-interval", "0"}, interval: -1},
		{name: "bad interval", env: map[string]string{"COMB_RETENTION_INTERVAL": "soon"}, err: "COMB_RETENTION_INTERVAL"},
		{name: "negative interval", args: []string{"--retention-interval", "-5s"}, err: "retention-interval"},
		{name: "bad key", env: map[string]string{"QUEEN_ENCRYPTION_KEY": "not-hex"}, err: "encryption-key"},
		{name: "short key", env: map[string]string{"COMB_ENCRYPTION_KEY": "abcd"}, err: "encryption-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, m, err := parseServe(t, tc.env, tc.args...)
			var got retentionSettings
			if err == nil {
				got, err = c.ret.settings()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || ExitCode(err) != ExitUsage {
					t.Fatalf("err %v (exit %d), want one mentioning %q, exit 2", err, ExitCode(err), tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.interval != tc.interval || len(got.key) != tc.keyLen {
				t.Fatalf("interval %v, key %d bytes; want %v, %d", got.interval, len(got.key), tc.interval, tc.keyLen)
			}
			warnings := strings.Join(m.settings.warnings, "\n")
			if (tc.warn == "") != (warnings == "") || !strings.Contains(warnings, tc.warn) {
				t.Fatalf("warnings %q, want one containing %q", warnings, tc.warn)
			}
		})
	}
}
