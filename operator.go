package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"
)

// Operator subcommands for replay: they talk HTTP to a running server, so
// they work the same against a local file or a remote edge box.

const groupsUsage = `Usage:
  comb groups [--url URL] [--json]

Lists every consumer group with its lag, one row per (group, queue). Talks
to a running server: --url (env COMB_URL, default http://127.0.0.1:6632),
with Authorization: Bearer $COMB_TOKEN when set.

Flags:
`

const seekUsage = `Usage:
  comb seek --group G --queue Q [--partition P]
            (--to-end | --timestamp T | --offset N | --snapshot NAME)
            [--dry-run] [--url URL]

Moves consumer group G's cursor on queue Q (every partition, or only P) and
prints the server's answer. Exactly one position:
  --to-end        skip everything pending; the next push is the next delivery
  --timestamp T   replay from the first segment committed at or after T
                  (RFC 3339 or YYYY-MM-DD; segment-granular, never mid-segment)
  --offset N      set the committed offset to exactly N (delivery resumes at N+1)
  --snapshot NAME restore the offsets captured by snapshot NAME (taken on Q)
--dry-run shows, per partition, where the cursor would go and how many
messages would be redelivered or skipped, and changes nothing.

Flags:
`

// groups runs "comb groups".
func (m *Main) groups(ctx context.Context, args []string) error {
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

// seekCmd runs "comb seek".
func (m *Main) seekCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seek", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, seekUsage); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	group := fs.String("group", "", "consumer group (required; __QUEUE_MODE__ is the group of pops without one)")
	queue := fs.String("queue", "", "queue (required)")
	partition := fs.String("partition", "", "only this partition")
	toEnd := fs.Bool("to-end", false, "skip everything pending")
	timestamp := fs.String("timestamp", "", "replay from the first segment committed at or after this time")
	offset := fs.String("offset", "", "set the committed offset to exactly this value")
	snapshot := fs.String("snapshot", "", "restore the offsets captured by this snapshot")
	dryRun := fs.Bool("dry-run", false, "show what would move and change nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("seek: unexpected argument %q", fs.Arg(0))
	}
	if *group == "" || *queue == "" {
		fs.Usage()
		return errors.New("seek: --group and --queue are required")
	}
	body := map[string]any{}
	if *toEnd {
		body["toEnd"] = true
	}
	if *timestamp != "" {
		body["timestamp"] = *timestamp
	}
	if *offset != "" {
		n, err := strconv.ParseInt(*offset, 10, 64)
		if err != nil {
			return fmt.Errorf("seek: --offset %q is not an integer", *offset)
		}
		body["offset"] = n
	}
	if *snapshot != "" {
		body["snapshot"] = *snapshot
	}
	if len(body) != 1 {
		fs.Usage()
		return errors.New("seek: give exactly one of --to-end, --timestamp, --offset or --snapshot")
	}
	if *dryRun {
		body["dryRun"] = true
	}
	path := "/api/v1/consumer-groups/" + url.PathEscape(*group) + "/queues/" + url.PathEscape(*queue)
	if *partition != "" {
		path += "/partitions/" + url.PathEscape(*partition)
	}
	status, reply, err := cl.call(ctx, http.MethodPost, path+"/seek", body)
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, reply, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(bytes.TrimSpace(reply))
	}
	if _, err := fmt.Fprintf(m.Stdout, "%s\n", pretty.Bytes()); err != nil {
		return err
	}
	if status/100 != 2 {
		return replyError("seek", status, reply)
	}
	return nil
}
