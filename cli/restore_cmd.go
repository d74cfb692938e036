package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/gcpace"
	"github.com/spf13/cobra"
)

const restoreLong = `Puts a copy of BACKUP (a file "comb backup" or "sqlite3 .backup" wrote)
at --db for the server to start on, as docs/operations.md's restore does by
hand: the copy is made beside --db, verified as "comb check" would, and
renamed in only when it has no findings (exit 1 otherwise, nothing
changed). The database that was at --db moves aside with its -wal and -shm,
to --db's name with .before-restore-TIME appended (the three together are
still a database: "comb check --db" it, or take what it holds since the
backup), so that no old WAL is ever replayed into the backup, which is
what starting on a backup copied next to an old -wal does.

Stop the server first: a file a comb serves is refused, and nothing is
changed. --progress (the default when stderr is a terminal) prints how far
the copy and its check have come on stderr.`

// restoreCmd is "comb restore".
func (m *App) restoreCmd() *cobra.Command {
	var dbPath, output string
	var showProgress bool
	cmd := &cobra.Command{
		Use:   "restore --db FILE BACKUP",
		Short: "Put a verified copy of a backup in place of a stopped server's database",
		Long:  restoreLong,
		Args:  cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	m.fileFlags(fs, "restore", &dbPath, &output, &showProgress)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		m.running = true
		return m.restore(cmd.Context(), dbPath, args[0], output == "json", m.wantProgress(fs, showProgress))
	}
	return cmd
}

func (m *App) restore(ctx context.Context, dbPath, backup string, asJSON, showProgress bool) (err error) {
	defer gcpace.Streaming(m.Getenv)()
	p := startProgress(showProgress, m.Stderr, "restore", m.progressInterval())
	defer func() { p.end(err == nil || errors.As(err, new(*exitError))) }()
	rep, err := broker.RestoreFile(ctx, dbPath, backup, p.fn())
	if err != nil {
		return err
	}
	chk := rep.Check
	findings := make([]string, len(chk.Findings))
	for i, f := range chk.Findings {
		findings[i] = fmt.Sprint(f)
		if !asJSON {
			fmt.Fprintln(m.Stdout, f)
		}
	}
	restored := len(findings) == 0
	if asJSON {
		if err := printJSON(m.Stdout, map[string]any{"db": dbPath, "backup": backup, "restored": restored, "bytes": rep.Bytes,
			"aside": rep.Aside, "queues": chk.Queues, "partitions": chk.Partitions, "messages": chk.Frames, "findings": findings}); err != nil {
			return err
		}
	}
	if !restored {
		return &exitError{code: ExitFindings, err: fmt.Errorf("restore: %s has %d findings; %s was not changed", backup, len(findings), dbPath)}
	}
	if asJSON {
		return nil
	}
	fmt.Fprintf(m.Stdout, "restored %s from %s (%d bytes): %d queues, %d partitions, %d messages, check ok\n",
		dbPath, backup, rep.Bytes, chk.Queues, chk.Partitions, chk.Frames)
	if rep.Aside != "" {
		moved := rep.Aside
		for _, side := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Lstat(rep.Aside + side); err == nil {
				moved += ", " + rep.Aside + side
			}
		}
		fmt.Fprintf(m.Stdout, "the database that was there is now %s\n", moved)
	}
	return nil
}
