package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// groupsCmd is "comb groups": it talks HTTP to a running server, so it
// works the same against a local file or a remote edge box.
func (m *App) groupsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List consumer groups with their lag",
		Long:  "Lists every consumer group with its lag, one row per (group, queue).",
		Args:  cobra.NoArgs,
	}
	cl := m.apiFlags(cmd)
	cmd.RunE = m.run(func(cmd *cobra.Command, args []string) error {
		return m.groups(cmd.Context(), cl)
	})
	return cmd
}

func (m *App) groups(ctx context.Context, cl *apiClient) error {
	asJSON, err := cl.asJSON()
	if err != nil {
		return err
	}
	body, err := cl.do(ctx, http.MethodGet, "/api/v1/consumer-groups", nil)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(m.Stdout, body)
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
