package cli

import (
	"context"
	"fmt"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/gcpace"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const checkLong = `Verifies a database without changing it: SQLite's integrity check, every
segment's checksum, that each partition's segments tile its log with no gap
or overlap, that cursors, leases and dedup keys lie inside their partition,
that no row has lost its owner, and every segment a consumer group met
damaged and put aside ("quarantine": its offsets, which the groups past it
did not receive). The file may be in use by a running server. Prints one
line per finding, naming queue, partition and offsets, and exits 1 when
there is any. On a large file it takes a while: --progress (the default
when stderr is a terminal) prints how far it has come on stderr.`

// checkCmd is "comb check".
func (m *App) checkCmd() *cobra.Command {
	var dbPath, output string
	var showProgress bool
	cmd := &cobra.Command{
		Use:   "check --db FILE",
		Short: "Verify a database offline; exit 1 on findings",
		Long:  checkLong,
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	m.fileFlags(fs, "check", &dbPath, &output, &showProgress)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		m.running = true
		return m.check(cmd.Context(), dbPath, output == "json", m.wantProgress(fs, showProgress))
	}
	return cmd
}

func (m *App) check(ctx context.Context, dbPath string, asJSON, showProgress bool) error {
	defer gcpace.Streaming(m.Getenv)()
	p := startProgress(showProgress, m.Stderr, "check", m.progressInterval())
	rep, err := broker.CheckProgress(ctx, dbPath, p.fn())
	p.end(err == nil)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if asJSON {
		findings := make([]string, len(rep.Findings))
		for i, f := range rep.Findings {
			findings[i] = fmt.Sprint(f)
		}
		if err := printJSON(m.Stdout, map[string]any{"db": dbPath, "schema": rep.SchemaVersion, "queues": rep.Queues,
			"partitions": rep.Partitions, "segments": rep.Segments, "messages": rep.Frames, "findings": findings}); err != nil {
			return err
		}
	} else {
		for _, f := range rep.Findings {
			fmt.Fprintln(m.Stdout, f)
		}
		fmt.Fprintf(m.Stdout, "%s: schema %d, %d queues, %d partitions, %d segments, %d messages, %d findings\n",
			dbPath, rep.SchemaVersion, rep.Queues, rep.Partitions, rep.Segments, rep.Frames, len(rep.Findings))
	}
	if len(rep.Findings) > 0 {
		return &exitError{code: ExitFindings, err: fmt.Errorf("check: %s: %d findings", dbPath, len(rep.Findings))}
	}
	return nil
}

// fileFlags are the flags of the commands that work on a database file
// (check, restore): --db, --output and --progress.
func (m *App) fileFlags(fs *pflag.FlagSet, verb string, dbPath, output *string, showProgress *bool) {
	fs.StringVar(dbPath, "db", "comb.db", "database file to "+verb+" (env COMB_DB)")
	m.setting(fs, "db", "")
	fs.StringVar(output, "output", "table", "output format: table or json (env COMB_OUTPUT)")
	m.setting(fs, "output", "")
	progressFlag(fs, showProgress)
}

// checkOutput refuses an --output the file commands do not print.
func checkOutput(output string) error {
	if output != "table" && output != "json" {
		return usageErrorf("--output %q: want table or json", output)
	}
	return nil
}
