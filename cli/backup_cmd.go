package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/comb-broker/comb/broker"
)

const backupUsage = `Usage:
  comb backup --out COPY                 copy the database of a running server (--url)
  comb backup --db FILE --out COPY       copy a database file, in use or not

Either way the copy is consistent: it holds every write answered before the
backup began, and writes keep flowing meanwhile. COPY must not exist. The
copy is verified as "comb check" would before the command succeeds. To
restore, stop the server and start it on the copy (see docs/operations.md).

The online form calls GET /api/v1/system/backup on --url (env COMB_URL,
default http://127.0.0.1:6632), with Authorization: Bearer $COMB_TOKEN when
set; it needs an admin token of the default tenant.
`

// backup runs "comb backup ...".
func (m *App) backup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, backupUsage, "\nFlags of comb backup:\n"); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	dbPath := fs.String("db", "", "copy this database file instead of asking a server")
	out := fs.String("out", "", "file to write the copy to; must not exist (required)")
	verify := fs.Bool("check", true, "verify the copy before succeeding")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("backup: --out is required")
	}
	if _, err := os.Lstat(*out); err == nil {
		return fmt.Errorf("backup: %s already exists", *out)
	}
	if *dbPath != "" {
		if err := broker.BackupFile(ctx, *dbPath, *out); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	} else if err := cl.download(ctx, "/api/v1/system/backup", *out); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	info, err := os.Stat(*out)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if !*verify {
		_, err := fmt.Fprintf(m.Stdout, "wrote %s (%d bytes), not checked\n", *out, info.Size())
		return err
	}
	rep, err := broker.Check(ctx, *out)
	if err != nil {
		return fmt.Errorf("backup: check the copy: %w", err)
	}
	for _, f := range rep.Findings {
		fmt.Fprintln(m.Stdout, f)
	}
	if len(rep.Findings) > 0 {
		return fmt.Errorf("backup: the copy %s has %d findings", *out, len(rep.Findings))
	}
	_, err = fmt.Fprintf(m.Stdout, "wrote %s (%d bytes): %d queues, %d partitions, %d messages, check ok\n",
		*out, info.Size(), rep.Queues, rep.Partitions, rep.Frames)
	return err
}

// download GETs path into the new file out. It writes beside out first and
// renames only a complete, synced copy, so out never holds half a file.
func (c *apiClient) download(ctx context.Context, path, out string) (err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(*c.url, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// No client timeout: a large database takes as long as it takes; ctx
	// still cancels.
	resp, err := (&http.Client{Transport: c.http.Transport}).Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
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
	n, err := io.Copy(f, resp.Body)
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
