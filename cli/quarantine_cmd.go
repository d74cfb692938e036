package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

const quarantineLong = `Lists the damaged segments a running server put aside, the most recent
first, with the offsets they held and the groups now past them.

A segment that fails its checksum or does not decode when a consumer group
meets it is copied aside and the group moves past it: its messages were not
delivered to that group. comb quarantine restore ID tries one again: if its
stored copy now reads, its messages are dead-lettered for the groups past
it (needs an admin token). comb check --db FILE reports them offline. See
docs/quarantine.md.`

// quarantineCmd is "comb quarantine", with restore beneath it.
func (m *App) quarantineCmd() *cobra.Command {
	var queue, partition string
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List damaged segments put aside, or restore one",
		Long:  quarantineLong,
		Args:  cobra.NoArgs,
	}
	cl := m.apiFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&queue, "queue", "", "only this queue")
	fs.StringVar(&partition, "partition", "", "only this partition")
	fs.IntVar(&limit, "limit", 100, "segments to list")
	fs.IntVar(&offset, "offset", 0, "segments to skip")
	cmd.RunE = m.run(func(cmd *cobra.Command, args []string) error {
		return m.quarantine(cmd.Context(), cl, pageQuery(map[string]string{"queue": queue, "partition": partition}, limit, offset))
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "restore ID",
		Short: "Try a quarantined segment again; dead-letter its messages if it reads",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return usageErrorf("segment id %q: want a positive integer", args[0])
			}
			m.running = true
			return m.quarantineRestore(cmd.Context(), cl, id)
		},
	})
	return cmd
}

// quarantineRow is the part of a quarantine listing entry the table shows.
type quarantineRow struct {
	ID            int64    `json:"id"`
	Queue         string   `json:"queue"`
	Partition     string   `json:"partition"`
	FirstOffset   int64    `json:"firstOffset"`
	LastOffset    int64    `json:"lastOffset"`
	Frames        int64    `json:"frames"`
	Reason        string   `json:"reason"`
	QuarantinedAt string   `json:"quarantinedAt"`
	PassedBy      []string `json:"passedBy"`
}

func (m *App) quarantine(ctx context.Context, cl *apiClient, q url.Values) error {
	return printPage(ctx, m, cl, listing[quarantineRow]{
		what: "quarantine", route: "/api/v1/quarantine", field: "segments",
		header: "ID\tPUT ASIDE AT\tQUEUE\tPARTITION\tOFFSETS\tMESSAGES\tGROUPS PAST IT\tREASON",
		row: func(s *quarantineRow) string {
			groups := strings.Join(s.PassedBy, ",")
			if groups == "" {
				groups = "-"
			}
			return fmt.Sprintf("%d\t%s\t%s\t%s\t%d-%d\t%d\t%s\t%s", s.ID, s.QuarantinedAt, s.Queue, s.Partition,
				s.FirstOffset, s.LastOffset, s.Frames, oneLine(groups, 40), oneLine(s.Reason, 60))
		},
	}, q)
}

// quarantineRestore runs "comb quarantine restore ID".
func (m *App) quarantineRestore(ctx context.Context, cl *apiClient, id int64) error {
	asJSON, err := cl.asJSON()
	if err != nil {
		return err
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
	if asJSON {
		return printJSON(m.Stdout, body)
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return fmt.Errorf("quarantine restore: decode reply: %w", err)
	}
	_, err = fmt.Fprintf(m.Stdout, "segment %d of %s reads again: %d messages dead-lettered for %s (%d rows); comb dlq redrive --queue %s appends them\n",
		id, reply.Queue, reply.Messages, strings.Join(reply.ConsumerGroups, ", "), reply.DeadLettered, reply.Queue)
	return err
}
