package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
)

const quarantineUsage = `Usage:
  comb quarantine [flags]     list the damaged segments a running server put aside
  comb quarantine restore ID  try one again: if its stored copy now reads,
                              dead-letter its messages for the groups past it

A segment that fails its checksum or does not decode when a consumer group
meets it is copied aside and the group moves past it: its messages were not
delivered to that group. This lists them, the most recent first, with the
offsets they held and the groups now past them. Talks to a running server:
--url (env COMB_URL, default http://127.0.0.1:6632), with Authorization:
Bearer $COMB_TOKEN when set (restore needs an admin token). comb check
--db FILE reports them offline. See docs/quarantine.md.
`

// quarantine runs "comb quarantine ...".
func (m *App) quarantine(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "restore" {
		return m.quarantineRestore(ctx, args[1:])
	}
	fs := flag.NewFlagSet("quarantine", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, quarantineUsage, "\nFlags of comb quarantine:\n"); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	queue := fs.String("queue", "", "only this queue")
	partition := fs.String("partition", "", "only this partition")
	limit := fs.Int("limit", 100, "segments to list")
	offset := fs.Int("offset", 0, "segments to skip")
	asJSON := fs.Bool("json", false, "print the server's JSON reply")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("quarantine: unexpected argument %q", fs.Arg(0))
	}
	q := url.Values{}
	if *queue != "" {
		q.Set("queue", *queue)
	}
	if *partition != "" {
		q.Set("partition", *partition)
	}
	q.Set("limit", strconv.Itoa(*limit))
	q.Set("offset", strconv.Itoa(*offset))
	body, err := cl.do(ctx, http.MethodGet, "/api/v1/quarantine?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintf(m.Stdout, "%s\n", bytes.TrimSpace(body))
		return err
	}
	var reply struct {
		Segments []struct {
			ID            int64    `json:"id"`
			Queue         string   `json:"queue"`
			Partition     string   `json:"partition"`
			FirstOffset   int64    `json:"firstOffset"`
			LastOffset    int64    `json:"lastOffset"`
			Frames        int64    `json:"frames"`
			Reason        string   `json:"reason"`
			QuarantinedAt string   `json:"quarantinedAt"`
			PassedBy      []string `json:"passedBy"`
		} `json:"segments"`
		Total int64 `json:"total"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return fmt.Errorf("quarantine: decode reply: %w", err)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPUT ASIDE AT\tQUEUE\tPARTITION\tOFFSETS\tMESSAGES\tGROUPS PAST IT\tREASON")
	for _, s := range reply.Segments {
		groups := strings.Join(s.PassedBy, ",")
		if groups == "" {
			groups = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d-%d\t%d\t%s\t%s\n", s.ID, s.QuarantinedAt, s.Queue, s.Partition,
			s.FirstOffset, s.LastOffset, s.Frames, oneLine(groups, 40), oneLine(s.Reason, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%d shown, %d in all\n", len(reply.Segments), reply.Total)
	return err
}

// quarantineRestore runs "comb quarantine restore ID".
func (m *App) quarantineRestore(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("quarantine restore", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(m.Stderr, quarantineUsage, "\nFlags of comb quarantine restore:\n")
		fs.PrintDefaults()
	}
	cl := m.apiFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if fs.NArg() != 1 || err != nil || id <= 0 {
		fs.Usage()
		return fmt.Errorf("quarantine restore: one segment id (a positive integer) is required")
	}
	body, err := cl.do(ctx, http.MethodPost, "/api/v1/quarantine/"+strconv.FormatInt(id, 10)+"/restore", nil)
	if err != nil {
		return err
	}
	var reply struct {
		Queue          string   `json:"queue"`
		Messages       int      `json:"messages"`
		ConsumerGroups []string `json:"consumerGroups"`
		DeadLettered   int      `json:"deadLettered"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return fmt.Errorf("quarantine restore: decode reply: %w", err)
	}
	_, err = fmt.Fprintf(m.Stdout, "segment %d of %s reads again: %d messages dead-lettered for %s (%d rows); comb dlq redrive --queue %s appends them\n",
		id, reply.Queue, reply.Messages, strings.Join(reply.ConsumerGroups, ", "), reply.DeadLettered, reply.Queue)
	return err
}
