package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/comb-broker/comb/combtype"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/gcpace"
	"github.com/spf13/cobra"
)

const backupLong = `Either way the copy is consistent: it holds every write answered before the
backup began, and writes keep flowing meanwhile. COPY must not exist. The
copy is verified as "comb check" would before the command succeeds (exit 1
when it has findings). To restore, stop the server, put the copy in place
with "comb restore" and start the server again. --progress (the default when stderr is a
terminal) prints how far the copy and its check have come on stderr.

Without --db it calls GET /api/v1/system/backup on --url; that needs an
admin token of the default tenant.`

// backupCmd is "comb backup".
func (m *App) backupCmd() *cobra.Command {
	var dbPath, out string
	var verify, showProgress bool
	cmd := &cobra.Command{
		Use:   "backup [--db FILE] --out COPY",
		Short: "Write a consistent copy of a running server's database, or of a file",
		Long:  backupLong,
		Args:  cobra.NoArgs,
	}
	cl := m.apiFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&dbPath, "db", "", "copy this database file instead of asking a server")
	fs.StringVar(&out, "out", "", "file to write the copy to; must not exist (required)")
	fs.BoolVar(&verify, "check", true, "verify the copy before succeeding")
	progressFlag(fs, &showProgress)
	_ = cmd.MarkFlagRequired("out")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := cl.asJSON()
		if err != nil {
			return err
		}
		m.running = true
		return m.backup(cmd.Context(), cl, dbPath, out, verify, asJSON, m.wantProgress(fs, showProgress))
	}
	return cmd
}

func (m *App) backup(ctx context.Context, cl *apiClient, dbPath, out string, verify, asJSON, showProgress bool) (err error) {
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("backup: %s already exists", out)
	}
	// What a deleted database left at the name would be read as the
	// copy's own WAL by whatever opens it next.
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(out + side); err == nil {
			return fmt.Errorf("backup: %s is left beside the name from another database, and would be read as the copy's; move it away", out+side)
		}
	}
	defer gcpace.Streaming(m.Getenv)()
	p := startProgress(showProgress, m.Stderr, "backup", m.progressInterval())
	defer func() { p.end(err == nil || errors.As(err, new(*exitError))) }()
	if dbPath != "" {
		if err := broker.BackupFileProgress(ctx, dbPath, out, p.fn()); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	} else if err := cl.download(ctx, "/api/v1/system/backup", out, p); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	info, err := os.Stat(out)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if !verify {
		if asJSON {
			return printJSON(m.Stdout, map[string]any{"out": out, "bytes": info.Size(), "checked": false})
		}
		_, err := fmt.Fprintf(m.Stdout, "wrote %s (%d bytes), not checked\n", out, info.Size())
		return err
	}
	rep, err := broker.CheckProgress(ctx, out, p.prefixed("check"))
	if err != nil {
		return fmt.Errorf("backup: check the copy: %w", err)
	}
	findings := make([]string, len(rep.Findings))
	for i, f := range rep.Findings {
		findings[i] = fmt.Sprint(f)
		if !asJSON {
			fmt.Fprintln(m.Stdout, f)
		}
	}
	if asJSON {
		if err := printJSON(m.Stdout, map[string]any{"out": out, "bytes": info.Size(), "checked": true, "queues": rep.Queues,
			"partitions": rep.Partitions, "messages": rep.Frames, "findings": findings}); err != nil {
			return err
		}
	}
	if len(rep.Findings) > 0 {
		return &exitError{code: ExitFindings, err: fmt.Errorf("backup: the copy %s has %d findings", out, len(rep.Findings))}
	}
	if asJSON {
		return nil
	}
	_, err = fmt.Fprintf(m.Stdout, "wrote %s (%d bytes): %d queues, %d partitions, %d messages, check ok\n",
		out, info.Size(), rep.Queues, rep.Partitions, rep.Frames)
	return err
}

// download GETs path into the new file out. It writes beside out first and
// renames only a complete, synced copy, so out never holds half a file.
// While the server makes its copy nothing arrives; p shows that wait, then
// the bytes received of the reply's length.
func (c *apiClient) download(ctx context.Context, path, out string, p *progress) (err error) {
	base, hc := c.target()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// No client timeout: a large database takes as long as it takes; ctx
	// still cancels.
	p.update(combtype.Progress{Phase: "server copying", Done: -1, Unit: combtype.UnitBytes})
	resp, err := (&http.Client{Transport: hc.Transport}).Do(req)
	if err != nil {
		return unreachable(fmt.Errorf("GET %s: %w", path, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return replyError("GET "+path, resp.StatusCode, body)
	}
	tmp := out + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	var body io.Reader = resp.Body
	if p != nil {
		body = &countingReader{r: resp.Body, total: resp.ContentLength, p: p}
	}
	n, err := io.Copy(f, body)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("download: got %d of %d bytes", n, resp.ContentLength)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s already exists", out)
	}
	return os.Rename(tmp, out)
}

// countingReader reports the bytes read through it as the download phase.
type countingReader struct {
	r     io.Reader
	n     int64
	total int64
	p     *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.p.update(combtype.Progress{Phase: "download", Done: c.n, Total: c.total, Unit: combtype.UnitBytes})
	return n, err
}
