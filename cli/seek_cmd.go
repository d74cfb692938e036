package cli

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
)

// "comb seek" talks HTTP to a running server, so it replays or skips the
// same way against a local file or a remote edge box.

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

// seekCmd runs "comb seek".
func (m *App) seekCmd(ctx context.Context, args []string) error {
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
