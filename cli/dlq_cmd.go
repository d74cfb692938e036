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

const dlqUsage = `Usage:
  comb dlq [flags]            list dead-lettered messages, newest first
  comb dlq redrive [flags]    append dead-lettered messages back to their queue
  comb dlq purge [flags]      delete dead-lettered messages for good (admin)

All talk to a running server: --url (env COMB_URL, default
http://127.0.0.1:6632), with Authorization: Bearer $COMB_TOKEN when set.
`

// dlq runs "comb dlq ...".
func (m *App) dlq(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "redrive" {
		return m.dlqRedrive(ctx, args[1:])
	}
	if len(args) > 0 && args[0] == "purge" {
		return m.dlqPurge(ctx, args[1:])
	}
	fs := flag.NewFlagSet("dlq", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, dlqUsage, "\nFlags of comb dlq:\n"); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	queue := fs.String("queue", "", "only this queue")
	group := fs.String("group", "", "only this consumer group")
	partition := fs.String("partition", "", "only this partition")
	limit := fs.Int("limit", 100, "messages to list")
	offset := fs.Int("offset", 0, "messages to skip")
	asJSON := fs.Bool("json", false, "print the server's JSON reply")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("dlq: unexpected argument %q", fs.Arg(0))
	}
	q := url.Values{}
	for k, v := range map[string]string{"queue": *queue, "consumerGroup": *group, "partition": *partition} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("limit", strconv.Itoa(*limit))
	q.Set("offset", strconv.Itoa(*offset))
	body, err := cl.do(ctx, http.MethodGet, "/api/v1/dlq?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintf(m.Stdout, "%s\n", bytes.TrimSpace(body))
		return err
	}
	var reply struct {
		Messages []struct {
			ID            string          `json:"id"`
			TransactionID string          `json:"transactionId"`
			Queue         string          `json:"queue"`
			Partition     string          `json:"partition"`
			ConsumerGroup string          `json:"consumerGroup"`
			ErrorMessage  *string         `json:"errorMessage"`
			RetryCount    int64           `json:"retryCount"`
			FailedAt      string          `json:"failedAt"`
			Data          json.RawMessage `json:"data"`
		} `json:"messages"`
		Total int64 `json:"total"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return fmt.Errorf("dlq: decode reply: %w", err)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAILED AT\tQUEUE\tPARTITION\tGROUP\tTRANSACTION ID\tRETRIES\tERROR")
	for _, msg := range reply.Messages {
		errText := ""
		if msg.ErrorMessage != nil {
			errText = *msg.ErrorMessage
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", msg.FailedAt, msg.Queue, msg.Partition, msg.ConsumerGroup,
			msg.TransactionID, msg.RetryCount, oneLine(errText, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%d shown, %d in all\n", len(reply.Messages), reply.Total)
	return err
}

// dlqRedrive runs "comb dlq redrive ...". Without --limit it calls the
// server until nothing matching is left, each call one bounded commit.
func (m *App) dlqRedrive(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dlq redrive", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, dlqUsage, "\nFlags of comb dlq redrive:\n"); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	queue := fs.String("queue", "", "queue whose dead-lettered messages to re-drive (required)")
	group := fs.String("group", "", "only rows of this consumer group")
	partition := fs.String("partition", "", "only this partition")
	limit := fs.Int("limit", 0, "re-drive at most this many messages in one call (0 = all, in batches)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *queue == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("dlq redrive: --queue is required")
	}
	req := map[string]any{"queue": *queue}
	if *group != "" {
		req["consumerGroup"] = *group
	}
	if *partition != "" {
		req["partition"] = *partition
	}
	if *limit > 0 {
		req["limit"] = *limit
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
		if *limit > 0 || res.Remaining == 0 || res.Deleted == 0 {
			_, err := fmt.Fprintf(m.Stdout, "re-drove %d messages to %s (%d already re-driven), removed %d DLQ rows, %d left\n",
				redriven, *queue, duplicates, deleted, res.Remaining)
			return err
		}
	}
}

// dlqPurge runs "comb dlq purge ...". It needs a filter or --all, as the
// server does. Without --limit it calls the server until nothing matching
// is left, each call one bounded commit.
func (m *App) dlqPurge(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dlq purge", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, dlqUsage, "\nFlags of comb dlq purge:\n"); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	queue := fs.String("queue", "", "only this queue")
	group := fs.String("group", "", "only rows of this consumer group")
	partition := fs.String("partition", "", "only this partition")
	from := fs.String("from", "", "only messages that failed at or after this time (RFC 3339 or YYYY-MM-DD)")
	to := fs.String("to", "", "only messages that failed at or before this time")
	ids := fs.String("ids", "", "only these message ids (comma-separated, as comb dlq --json shows them)")
	all := fs.Bool("all", false, "allow a purge with no filter: every dead letter of the tenant")
	limit := fs.Int("limit", 0, "delete at most this many rows in one call (0 = all, in batches)")
	dryRun := fs.Bool("dry-run", false, "only say how many dead letters match")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("dlq purge: unexpected argument %q", fs.Arg(0))
	}
	q := url.Values{}
	for k, v := range map[string]string{"queue": *queue, "consumerGroup": *group, "partition": *partition,
		"from": *from, "to": *to, "ids": *ids} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 && !*all {
		fs.Usage()
		return fmt.Errorf("dlq purge: give a filter (--queue, --group, --partition, --from, --to, --ids) or --all")
	}
	if *dryRun {
		if *ids != "" {
			return fmt.Errorf("dlq purge: --dry-run counts by filters; it cannot count --ids")
		}
		q.Set("limit", "1")
		body, err := cl.do(ctx, http.MethodGet, "/api/v1/dlq?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		var reply struct{ Total int64 }
		if err := json.Unmarshal(body, &reply); err != nil {
			return fmt.Errorf("dlq purge: decode reply: %w", err)
		}
		_, err = fmt.Fprintf(m.Stdout, "%d dead letters match; nothing deleted (dry run)\n", reply.Total)
		return err
	}
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
