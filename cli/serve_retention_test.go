package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestRetentionFlags(t *testing.T) {
	key := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		interval time.Duration
		keyLen   int
		err      string
	}{
		{name: "defaults", interval: 5 * time.Minute},
		{name: "env", env: map[string]string{"RETENTION_INTERVAL": "2000", "QUEEN_ENCRYPTION_KEY": key},
			interval: 2 * time.Second, keyLen: 32},
		{name: "comb key", env: map[string]string{"COMB_ENCRYPTION_KEY": key}, interval: 5 * time.Minute, keyLen: 32},
		{name: "flag beats env", env: map[string]string{"RETENTION_INTERVAL": "2000"}, args: []string{"--retention-interval", "500"},
			interval: 500 * time.Millisecond},
		{name: "zero disables", args: []string{"--retention-interval", "0"}, interval: -1},
		{name: "bad interval", env: map[string]string{"RETENTION_INTERVAL": "soon"}, err: "retention interval"},
		{name: "negative interval", args: []string{"--retention-interval", "-5"}, err: "retention interval"},
		{name: "bad key", env: map[string]string{"QUEEN_ENCRYPTION_KEY": "not-hex"}, err: "QUEEN_ENCRYPTION_KEY"},
		{name: "short key", env: map[string]string{"QUEEN_ENCRYPTION_KEY": "abcd"}, err: "QUEEN_ENCRYPTION_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &App{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return tc.env[k] }}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			rf := m.retentionFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := rf.settings(m)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.interval != tc.interval || len(got.key) != tc.keyLen {
				t.Fatalf("interval %v, key %d bytes; want %v, %d", got.interval, len(got.key), tc.interval, tc.keyLen)
			}
		})
	}
}
