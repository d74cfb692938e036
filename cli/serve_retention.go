package cli

import (
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/spf13/pflag"
)

// retentionFlags are serve's settings for the work done at rest:
// retention sweeps and payload encryption.
type retentionFlags struct {
	interval  time.Duration
	snapshots time.Duration
	key       string
}

// retentionSettings are retentionFlags checked and decoded.
type retentionSettings struct {
	interval  time.Duration // negative = no periodic sweep
	snapshots time.Duration // least time between expired-snapshot deletions
	key       []byte        // nil = no encryption key
}

func (m *App) retentionFlags(fs *pflag.FlagSet) *retentionFlags {
	var r retentionFlags
	// The flag took milliseconds before: a bare number still does, with a warning.
	m.durationSetting(fs, &r.interval, "retention-interval", 5*time.Minute, "RETENTION_INTERVAL", time.Millisecond,
		"time between retention sweeps; 0 disables them (env COMB_RETENTION_INTERVAL)")
	m.durationSetting(fs, &r.snapshots, "snapshot-sweep-interval", time.Hour, "SNAPSHOT_SWEEP_INTERVAL", 0,
		"least time between deletions of expired snapshots, run within retention sweeps (env COMB_SNAPSHOT_SWEEP_INTERVAL)")
	fs.StringVar(&r.key, "encryption-key", "", "key sealing payloads at rest, 64 hex digits (env COMB_ENCRYPTION_KEY, preferred: flags show in ps)")
	m.secret(fs, "encryption-key", "QUEEN_ENCRYPTION_KEY")
	return &r
}

// settings checks the flags and decodes the encryption key.
func (r *retentionFlags) settings() (retentionSettings, error) {
	out := retentionSettings{interval: r.interval, snapshots: r.snapshots}
	if r.interval < 0 {
		return out, usageErrorf("--retention-interval %v: want 0 (off) or a positive duration", r.interval)
	}
	if r.interval == 0 {
		out.interval = -1
	}
	if r.snapshots <= 0 {
		return out, usageErrorf("--snapshot-sweep-interval %v: want a positive duration", r.snapshots)
	}
	var err error
	out.key, err = broker.ParseEncryptionKey(r.key)
	if err != nil {
		return out, usageErrorf("--encryption-key: %w", err)
	}
	return out, nil
}
