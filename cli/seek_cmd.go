package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// "comb seek" talks HTTP to a running server, so it replays or skips the
// same way against a local file or a remote edge box.

const seekLong = `Moves consumer group G's cursor on queue Q (every partition, or only P)
and prints, per partition, where it went. Exactly one position:
  --to-end        skip everything pending; the next push is the next delivery
  --timestamp T   replay from the first segment committed at or after T
                  (RFC 3339 or YYYY-MM-DD; segment-granular, never mid-segment)
  --offset N      set the committed offset to exactly N (delivery resumes at N+1)
  --snapshot NAME restore the offsets captured by snapshot NAME (taken on Q)
--dry-run shows, per partition, where the cursor would go and how many
messages would be redelivered or skipped, and changes nothing.`

type seekArgs struct {
	group, queue, partition, timestamp, offset, snapshot string
	toEnd, dryRun                                        bool
}

func (m *App) seekCmd() *cobra.Command {
	var a seekArgs
	cmd := &cobra.Command{
		Use:   "seek --group G --queue Q (--to-end | --timestamp T | --offset N | --snapshot NAME)",
		Short: "Move a consumer group's cursor: replay or skip",
		Long:  seekLong,
		Args:  cobra.NoArgs,
	}
	cl := m.apiFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&a.group, "group", "", "consumer group (required; __QUEUE_MODE__ is the group of pops without one)")
	fs.StringVar(&a.queue, "queue", "", "queue (required)")
	fs.StringVar(&a.partition, "partition", "", "only this partition")
	fs.BoolVar(&a.toEnd, "to-end", false, "skip everything pending")
	fs.StringVar(&a.timestamp, "timestamp", "", "replay from the first segment committed at or after this time")
	fs.StringVar(&a.offset, "offset", "", "set the committed offset to exactly this value")
	fs.StringVar(&a.snapshot, "snapshot", "", "restore the offsets captured by this snapshot")
	fs.BoolVar(&a.dryRun, "dry-run", false, "show what would move and change nothing")
	_ = cmd.MarkFlagRequired("group")
	_ = cmd.MarkFlagRequired("queue")
	cmd.MarkFlagsOneRequired("to-end", "timestamp", "offset", "snapshot")
	cmd.MarkFlagsMutuallyExclusive("to-end", "timestamp", "offset", "snapshot")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := cl.asJSON()
		if err != nil {
			return err
		}
		body := map[string]any{}
		switch {
		case a.toEnd:
			body["toEnd"] = true
		case a.timestamp != "":
			body["timestamp"] = a.timestamp
		case a.offset != "":
			n, err := strconv.ParseInt(a.offset, 10, 64)
			if err != nil {
				return usageErrorf("--offset %q is not an integer", a.offset)
			}
			body["offset"] = n
		case a.snapshot != "":
			body["snapshot"] = a.snapshot
		}
		if a.dryRun {
			body["dryRun"] = true
		}
		m.running = true
		return m.seek(cmd.Context(), cl, a, body, asJSON)
	}
	return cmd
}

func (m *App) seek(ctx context.Context, cl *apiClient, a seekArgs, body map[string]any, asJSON bool) error {
	path := "/api/v1/consumer-groups/" + url.PathEscape(a.group) + "/queues/" + url.PathEscape(a.queue)
	if a.partition != "" {
		path += "/partitions/" + url.PathEscape(a.partition)
	}
	reply, err := cl.do(ctx, http.MethodPost, path+"/seek", body)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(m.Stdout, reply)
	}
	var res struct {
		ConsumerGroup     string `json:"consumerGroup"`
		QueueName         string `json:"queueName"`
		DryRun            bool   `json:"dryRun"`
		PartitionsUpdated int64  `json:"partitionsUpdated"`
		Updated           bool   `json:"updated"` // the reply of a one-partition seek
		Partitions        []struct {
			Partition string `json:"partition"`
			From      int64  `json:"from"`
			To        int64  `json:"to"`
			Redeliver int64  `json:"redeliver"`
			Skip      int64  `json:"skip"`
			Clamped   bool   `json:"clamped"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(reply, &res); err != nil {
		return fmt.Errorf("seek: decode reply: %w", err)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tFROM\tTO\tREDELIVER\tSKIP\tCLAMPED")
	for _, p := range res.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%t\n", p.Partition, p.From, p.To, p.Redeliver, p.Skip, p.Clamped)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Updated {
		res.PartitionsUpdated = 1
	}
	if res.DryRun {
		_, err = fmt.Fprintf(m.Stdout, "dry run: %s on %s not moved\n", res.ConsumerGroup, res.QueueName)
	} else {
		_, err = fmt.Fprintf(m.Stdout, "moved %s on %s: %d partitions updated\n", res.ConsumerGroup, res.QueueName, res.PartitionsUpdated)
	}
	return err
}
