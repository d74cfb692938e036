package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// dlqCmd is "comb dlq", with redrive and purge beneath it.
func (m *App) dlqCmd() *cobra.Command {
	var queue, group, partition string
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, re-drive or purge dead-lettered messages",
		Long:  "Lists dead-lettered messages, newest first; comb dlq redrive appends them back to their queue, comb dlq purge deletes them for good (admin).",
		Args:  cobra.NoArgs,
	}
	cl := m.apiFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&queue, "queue", "", "only this queue")
	fs.StringVar(&group, "group", "", "only this consumer group")
	fs.StringVar(&partition, "partition", "", "only this partition")
	fs.IntVar(&limit, "limit", 100, "messages to list")
	fs.IntVar(&offset, "offset", 0, "messages to skip")
	cmd.RunE = m.run(func(cmd *cobra.Command, args []string) error {
		q := pageQuery(map[string]string{"queue": queue, "consumerGroup": group, "partition": partition}, limit, offset)
		return m.dlqList(cmd.Context(), cl, q)
	})
	cmd.AddCommand(m.dlqRedriveCmd(cl), m.dlqPurgeCmd(cl))
	return cmd
}

// dlqRow is the part of a DLQ listing entry the table shows.
type dlqRow struct {
	TransactionID string  `json:"transactionId"`
	Queue         string  `json:"queue"`
	Partition     string  `json:"partition"`
	ConsumerGroup string  `json:"consumerGroup"`
	ErrorMessage  *string `json:"errorMessage"`
	RetryCount    int64   `json:"retryCount"`
	FailedAt      string  `json:"failedAt"`
}

func (m *App) dlqList(ctx context.Context, cl *apiClient, q url.Values) error {
	return printPage(ctx, m, cl, listing[dlqRow]{
		what: "dlq", route: "/api/v1/dlq", field: "messages",
		header: "FAILED AT\tQUEUE\tPARTITION\tGROUP\tTRANSACTION ID\tRETRIES\tERROR",
		row: func(r *dlqRow) string {
			errText := ""
			if r.ErrorMessage != nil {
				errText = *r.ErrorMessage
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s", r.FailedAt, r.Queue, r.Partition, r.ConsumerGroup,
				r.TransactionID, r.RetryCount, oneLine(errText, 60))
		},
	}, q)
}

// pageQuery is the query of one page of a listing route: the filters
// given (empty ones left out), limit and offset.
func pageQuery(filters map[string]string, limit, offset int) url.Values {
	q := url.Values{}
	for k, v := range filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("limit", strconv.Itoa(limit))
	q.Set("offset", strconv.Itoa(offset))
	return q
}

// listing describes how a listing command prints one page of its route.
type listing[T any] struct {
	what   string            // the command, for errors
	route  string            // the GET route
	field  string            // the reply's field holding the rows
	header string            // the table's header, tab-separated
	row    func(r *T) string // one row, tab-separated
}

// printPage prints one page of a listing route: the reply as it is with
// --output json, else a table of its rows and how many there are in all
// (the reply's total).
func printPage[T any](ctx context.Context, m *App, cl *apiClient, l listing[T], q url.Values) error {
	asJSON, err := cl.asJSON()
	if err != nil {
		return err
	}
	body, err := cl.do(ctx, http.MethodGet, l.route+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(m.Stdout, body)
	}
	var reply map[string]json.RawMessage
	var rows []T
	var total int64
	if err := json.Unmarshal(body, &reply); err != nil {
		return fmt.Errorf("%s: decode reply: %w", l.what, err)
	}
	for name, into := range map[string]any{l.field: &rows, "total": &total} {
		if raw, ok := reply[name]; ok { // absent reads as empty, as a struct would decode it
			if err := json.Unmarshal(raw, into); err != nil {
				return fmt.Errorf("%s: decode reply's %s: %w", l.what, name, err)
			}
		}
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, l.header)
	for i := range rows {
		fmt.Fprintln(tw, l.row(&rows[i]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%d shown, %d in all\n", len(rows), total)
	return err
}

// dlqRedriveCmd is "comb dlq redrive". Without --limit it calls the
// server until nothing matching is left, each call one bounded commit.
func (m *App) dlqRedriveCmd(cl *apiClient) *cobra.Command {
	var queue, group, partition string
	var limit int
	cmd := &cobra.Command{
		Use:   "redrive --queue Q",
		Short: "Append dead-lettered messages back to their queue",
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&queue, "queue", "", "queue whose dead-lettered messages to re-drive (required)")
	fs.StringVar(&group, "group", "", "only rows of this consumer group")
	fs.StringVar(&partition, "partition", "", "only this partition")
	fs.IntVar(&limit, "limit", 0, "re-drive at most this many messages in one call (0 = all, in batches)")
	_ = cmd.MarkFlagRequired("queue")
	cmd.RunE = m.run(func(cmd *cobra.Command, args []string) error {
		return m.dlqRedrive(cmd.Context(), cl, queue, group, partition, limit)
	})
	return cmd
}

func (m *App) dlqRedrive(ctx context.Context, cl *apiClient, queue, group, partition string, limit int) error {
	asJSON, err := cl.asJSON()
	if err != nil {
		return err
	}
	req := map[string]any{"queue": queue}
	if group != "" {
		req["consumerGroup"] = group
	}
	if partition != "" {
		req["partition"] = partition
	}
	if limit > 0 {
		req["limit"] = limit
	}
	var redriven, duplicates, deleted int64
	for {
		body, err := cl.do(ctx, http.MethodPost, "/api/v1/dlq/redrive", req)
		if err != nil {
			return err
		}
		var res struct {
			Redriven, Duplicates, Deleted, Remaining int64
		}
		if err := json.Unmarshal(body, &res); err != nil {
			return fmt.Errorf("dlq redrive: decode reply: %w", err)
		}
		redriven, duplicates, deleted = redriven+res.Redriven, duplicates+res.Duplicates, deleted+res.Deleted
		if limit > 0 || res.Remaining == 0 || res.Deleted == 0 {
			if asJSON {
				return printJSON(m.Stdout, map[string]any{"queue": queue, "redriven": redriven, "duplicates": duplicates,
					"deleted": deleted, "remaining": res.Remaining})
			}
			_, err := fmt.Fprintf(m.Stdout, "re-drove %d messages to %s (%d already re-driven), removed %d DLQ rows, %d left\n",
				redriven, queue, duplicates, deleted, res.Remaining)
			return err
		}
	}
}

// dlqPurgeCmd is "comb dlq purge". It needs a filter or --all, as the
// server does. Without --limit it calls the server until nothing matching
// is left, each call one bounded commit.
func (m *App) dlqPurgeCmd(cl *apiClient) *cobra.Command {
	var p dlqPurgeArgs
	cmd := &cobra.Command{
		Use:   "purge (--queue Q | --group G | --partition P | --from T | --to T | --ids IDS | --all)",
		Short: "Delete dead-lettered messages for good (admin)",
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&p.queue, "queue", "", "only this queue")
	fs.StringVar(&p.group, "group", "", "only rows of this consumer group")
	fs.StringVar(&p.partition, "partition", "", "only this partition")
	fs.StringVar(&p.from, "from", "", "only messages that failed at or after this time (RFC 3339 or YYYY-MM-DD)")
	fs.StringVar(&p.to, "to", "", "only messages that failed at or before this time")
	fs.StringVar(&p.ids, "ids", "", "only these message ids (comma-separated, as comb dlq --output json shows them)")
	fs.BoolVar(&p.all, "all", false, "allow a purge with no filter: every dead letter of the tenant")
	fs.IntVar(&p.limit, "limit", 0, "delete at most this many rows in one call (0 = all, in batches)")
	fs.BoolVar(&p.dryRun, "dry-run", false, "only say how many dead letters match")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return m.dlqPurge(cmd.Context(), cl, p)
	}
	return cmd
}

type dlqPurgeArgs struct {
	queue, group, partition, from, to, ids string
	all, dryRun                            bool
	limit                                  int
}

func (m *App) dlqPurge(ctx context.Context, cl *apiClient, p dlqPurgeArgs) error {
	asJSON, err := cl.asJSON()
	if err != nil {
		return err
	}
	queue, group, partition, from, to, ids, all, limit, dryRun := &p.queue, &p.group, &p.partition, &p.from, &p.to, &p.ids, &p.all, &p.limit, &p.dryRun
	q := url.Values{}
	for k, v := range map[string]string{"queue": *queue, "consumerGroup": *group, "partition": *partition,
		"from": *from, "to": *to, "ids": *ids} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 && !*all {
		return usageErrorf("give a filter (--queue, --group, --partition, --from, --to, --ids) or --all")
	}
	if *dryRun {
		if *ids != "" {
			return usageErrorf("--dry-run counts by filters; it cannot count --ids")
		}
		m.running = true
		q.Set("limit", "1")
		body, err := cl.do(ctx, http.MethodGet, "/api/v1/dlq?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		var reply struct{ Total int64 }
		if err := json.Unmarshal(body, &reply); err != nil {
			return fmt.Errorf("dlq purge: decode reply: %w", err)
		}
		if asJSON {
			return printJSON(m.Stdout, map[string]any{"dryRun": true, "matching": reply.Total})
		}
		_, err = fmt.Fprintf(m.Stdout, "%d dead letters match; nothing deleted (dry run)\n", reply.Total)
		return err
	}
	m.running = true
	if *all {
		q.Set("all", "true")
	}
	if *limit > 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	var deleted int64
	for {
		body, err := cl.do(ctx, http.MethodDelete, "/api/v1/dlq?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		var res struct{ Deleted, Remaining int64 }
		if err := json.Unmarshal(body, &res); err != nil {
			return fmt.Errorf("dlq purge: decode reply: %w", err)
		}
		deleted += res.Deleted
		if *limit > 0 || res.Remaining == 0 || res.Deleted == 0 {
			if asJSON {
				return printJSON(m.Stdout, map[string]any{"deleted": deleted, "remaining": res.Remaining})
			}
			_, err := fmt.Fprintf(m.Stdout, "purged %d dead letters, %d left\n", deleted, res.Remaining)
			return err
		}
	}
}

// oneLine shortens s to one line of at most n runes for a table cell.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
