package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/comb-broker/comb/broker"
)

const checkUsage = `Usage:
  comb check --db FILE

Verifies a database without changing it: SQLite's integrity check, every
segment's checksum, that each partition's segments tile its log with no gap
or overlap, that cursors, leases and dedup keys lie inside their partition,
that no row has lost its owner, and every segment a consumer group met
damaged and put aside ("quarantine": its offsets, which the groups past it
did not receive). The file may be in use by a running
server. Prints one line per finding, naming queue, partition and offsets,
and exits non-zero when there is any.
`

// check runs "comb check ...".
func (m *App) check(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, checkUsage, "\nFlags of comb check:\n"); fs.PrintDefaults() }
	dbPath := fs.String("db", m.env("COMB_DB", "comb.db"), "database file to check (env COMB_DB)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("check: unexpected argument %q", fs.Arg(0))
	}
	rep, err := broker.Check(ctx, *dbPath)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	for _, f := range rep.Findings {
		fmt.Fprintln(m.Stdout, f)
	}
	fmt.Fprintf(m.Stdout, "%s: schema %d, %d queues, %d partitions, %d segments, %d messages, %d findings\n",
		*dbPath, rep.SchemaVersion, rep.Queues, rep.Partitions, rep.Segments, rep.Frames, len(rep.Findings))
	if len(rep.Findings) > 0 {
		return fmt.Errorf("check: %s: %d findings", *dbPath, len(rep.Findings))
	}
	return nil
}
