package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"text/tabwriter"
	"time"
)

// "comb groups" talks HTTP to a running server, so it works the same
// against a local file or a remote edge box.

const groupsUsage = `Usage:
  comb groups [--url URL] [--json]

Lists every consumer group with its lag, one row per (group, queue). Talks
to a running server: --url (env COMB_URL, default http://127.0.0.1:6632),
with Authorization: Bearer $COMB_TOKEN when set.

Flags:
`

// groups runs "comb groups".
func (m *App) groups(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("groups", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, groupsUsage); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	asJSON := fs.Bool("json", false, "print the server's JSON reply")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("groups: unexpected argument %q", fs.Arg(0))
	}
	status, body, err := cl.call(ctx, http.MethodGet, "/api/v1/consumer-groups", nil)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return replyError("groups", status, body)
	}
	if *asJSON {
		_, err := fmt.Fprintf(m.Stdout, "%s\n", bytes.TrimSpace(body))
		return err
	}
	var groups []struct {
		Name              string `json:"name"`
		QueueName         string `json:"queueName"`
		PartitionCursors  int64  `json:"partitionCursors"`
		PartitionsWithLag int64  `json:"partitionsWithLag"`
		TotalLag          int64  `json:"totalLag"`
		MaxTimeLag        int64  `json:"maxTimeLag"`
		State             string `json:"state"`
	}
	if err := json.Unmarshal(body, &groups); err != nil {
		return fmt.Errorf("groups: decode reply: %w", err)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tQUEUE\tPARTITIONS\tLAGGING\tLAG (MESSAGES)\tLAG (TIME)\tSTATE")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", g.Name, g.QueueName, g.PartitionCursors, g.PartitionsWithLag,
			g.TotalLag, time.Duration(g.MaxTimeLag)*time.Second, g.State)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%d group/queue pairs\n", len(groups))
	return err
}
