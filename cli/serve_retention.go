package cli

import (
	"cmp"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/comb-broker/comb/broker"
)

// retentionFlags are serve's settings for the work done at rest:
// retention sweeps and payload encryption.
type retentionFlags struct {
	interval  string // milliseconds
	snapshots time.Duration
}

// retentionSettings are retentionFlags checked and decoded.
type retentionSettings struct {
	interval  time.Duration // negative = no periodic sweep
	snapshots time.Duration // least time between expired-snapshot deletions
	key       []byte        // nil = no encryption key
}

func (m *App) retentionFlags(fs *flag.FlagSet) *retentionFlags {
	var r retentionFlags
	fs.StringVar(&r.interval, "retention-interval", m.env("RETENTION_INTERVAL", "300000"),
		"milliseconds between retention sweeps; 0 disables them (env RETENTION_INTERVAL)")
	def, err := time.ParseDuration(m.env("SNAPSHOT_SWEEP_INTERVAL", "1h"))
	if err != nil {
		def = time.Hour // a bad value in the environment is reported by the flag check below
	}
	fs.DurationVar(&r.snapshots, "snapshot-sweep-interval", def,
		"least time between deletions of expired snapshots, run within retention sweeps (env SNAPSHOT_SWEEP_INTERVAL)")
	return &r
}

// settings checks the flags and reads the encryption key from the
// environment only (QUEEN_ENCRYPTION_KEY, or COMB_ENCRYPTION_KEY): a key
// given as a flag would show in ps.
func (r *retentionFlags) settings(m *App) (retentionSettings, error) {
	var out retentionSettings
	ms, err := strconv.ParseInt(r.interval, 10, 64)
	if err != nil || ms < 0 {
		return out, fmt.Errorf("retention interval %q: want a non-negative number of milliseconds", r.interval)
	}
	out.interval = time.Duration(ms) * time.Millisecond
	if r.snapshots <= 0 {
		return out, fmt.Errorf("snapshot sweep interval %v: want a positive duration", r.snapshots)
	}
	if v := m.Getenv("SNAPSHOT_SWEEP_INTERVAL"); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			return out, fmt.Errorf("SNAPSHOT_SWEEP_INTERVAL %q: %w", v, err)
		}
	}
	out.snapshots = r.snapshots
	if ms == 0 {
		out.interval = -1
	}
	out.key, err = broker.ParseEncryptionKey(cmp.Or(m.Getenv("QUEEN_ENCRYPTION_KEY"), m.Getenv("COMB_ENCRYPTION_KEY")))
	if err != nil {
		return out, fmt.Errorf("QUEEN_ENCRYPTION_KEY: %w", err)
	}
	return out, nil
}
