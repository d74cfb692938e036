package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

const streamsLong = `Lists the streaming queries registered on a running server (the Queen
streaming SDKs register one per query name), by name, with the queue each
reads and the queue it writes to. comb streams delete NAME deletes one with
all of its state (needs an admin token): a worker still running it fails
its next cycle, and registering the name again starts it with no state.
The server holds at most --max-stream-queries; deleting one makes room.
See docs/streams.md.`

// streamsCmd is "comb streams", with delete beneath it.
func (m *App) streamsCmd() *cobra.Command {
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "List streaming queries, or delete one with its state",
		Long:  streamsLong,
		Args:  cobra.NoArgs,
	}
	cl := m.apiFlags(cmd)
	fs := cmd.Flags()
	fs.IntVar(&limit, "limit", 100, "queries to list")
	fs.IntVar(&offset, "offset", 0, "queries to skip")
	cmd.RunE = m.run(func(cmd *cobra.Command, args []string) error {
		return m.streams(cmd.Context(), cl, pageQuery(nil, limit, offset))
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a streaming query and all of its state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m.running = true
			return m.streamsDelete(cmd.Context(), cl, args[0])
		},
	})
	return cmd
}

// streamRow is a streaming query as the listing answers it.
type streamRow struct {
	Name        string `json:"name"`
	QueryID     string `json:"queryId"`
	SourceQueue string `json:"sourceQueue"`
	SinkQueue   string `json:"sinkQueue"`
	ConfigHash  string `json:"configHash"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
}

func (m *App) streams(ctx context.Context, cl *apiClient, q url.Values) error {
	return printPage(ctx, m, cl, listing[streamRow]{
		what: "streams", route: "/api/v1/streams/queries", field: "queries",
		header: "NAME\tSOURCE\tSINK\tQUERY ID\tREGISTERED",
		row: func(s *streamRow) string {
			sink := s.SinkQueue
			if sink == "" {
				sink = "-"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", oneLine(s.Name, 60), s.SourceQueue, sink, s.QueryID, s.UpdatedAt)
		},
	}, q)
}

// streamsDelete runs "comb streams delete NAME".
func (m *App) streamsDelete(ctx context.Context, cl *apiClient, name string) error {
	asJSON, err := cl.asJSON()
	if err != nil {
		return err
	}
	body, err := cl.do(ctx, http.MethodDelete, "/api/v1/streams/queries/"+url.PathEscape(name), nil)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(m.Stdout, body)
	}
	_, err = fmt.Fprintf(m.Stdout, "deleted streaming query %s and its state\n", name)
	return err
}
