package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/forward"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Forwarders on the serve command: declared by --forward flags and a
// --forward-config file, stored in the database, run by a forward.Runner
// that serve starts after the broker opens and stops before it closes.

// forwardSpec is one declared forwarder, as a flag or a config file entry.
type forwardSpec struct {
	Name          string `json:"name"`
	Direction     string `json:"direction"`
	Queue         string `json:"queue"`
	Upstream      string `json:"upstream"`
	UpstreamQueue string `json:"upstreamQueue"`
	Token         string `json:"token"`
	ConsumerGroup string `json:"consumerGroup"`
	Batch         int    `json:"batch"`
	IDPrefix      string `json:"idPrefix,omitempty"`
}

func (s *forwardSpec) forwarder() *combtype.Forwarder {
	return &combtype.Forwarder{Name: s.Name, Direction: s.Direction, Queue: s.Queue, UpstreamURL: s.Upstream,
		UpstreamQueue: s.UpstreamQueue, Token: s.Token, Group: s.ConsumerGroup, Batch: s.Batch, IDPrefix: s.IDPrefix}
}

// parseForwardSpec reads "name=N,queue=Q,upstream=URL[,direction=pull]
// [,upstreamQueue=U][,token=T][,consumerGroup=G][,batch=B][,idPrefix=P]".
func parseForwardSpec(v string) (forwardSpec, error) {
	var s forwardSpec
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return s, fmt.Errorf("--forward %q: %q is not key=value", v, kv)
		}
		switch strings.TrimSpace(k) {
		case "name":
			s.Name = val
		case "direction":
			s.Direction = val
		case "queue":
			s.Queue = val
		case "upstream":
			s.Upstream = val
		case "upstreamQueue":
			s.UpstreamQueue = val
		case "token":
			s.Token = val
		case "consumerGroup":
			s.ConsumerGroup = val
		case "idPrefix":
			s.IDPrefix = val
		case "batch":
			n, err := strconv.Atoi(val)
			if err != nil {
				return s, fmt.Errorf("--forward %q: batch %q is not a number", v, val)
			}
			s.Batch = n
		default:
			return s, fmt.Errorf("--forward %q: unknown key %q", v, k)
		}
	}
	return s, nil
}

type forwardConfig struct {
	flags      []string // --forward, one spec each
	file       string
	maxBackoff time.Duration
	poll       time.Duration
	deviceID   string
	envTok     func(string) string
}

// forwardFlags adds --forward (repeatable) and --forward-config to fs.
func (m *App) forwardFlags(fs *pflag.FlagSet) *forwardConfig {
	c := &forwardConfig{envTok: m.Getenv}
	fs.StringArrayVar(&c.flags, "forward", nil, "declare a forwarder, repeatable: name=N,queue=Q,upstream=URL[,direction=push|pull][,upstreamQueue=U]"+
		"[,token=T][,consumerGroup=G][,batch=B][,idPrefix=P|none]; queue may be a glob (push); token=$VAR reads the environment "+
		"(env COMB_FORWARD: specs separated by ;)")
	m.setting(fs, "forward", "")
	m.durationSetting(fs, &c.maxBackoff, "forward-max-backoff", forward.DefaultMaxBackoff, "", 0,
		"longest wait between a forwarder's retries while its upstream fails (env COMB_FORWARD_MAX_BACKOFF)")
	m.durationSetting(fs, &c.poll, "forward-poll", forward.DefaultPoll, "", 0, "how long a forwarder's pop waits for messages (env COMB_FORWARD_POLL)")
	fs.StringVar(&c.deviceID, "device-id", "", "this device's name in the transactionIds its push forwarders send upstream "+
		"(default idPrefix DEVICE-ID:); default: one chosen at first start from the host name and kept in the database (env COMB_DEVICE_ID)")
	m.setting(fs, "device-id", "")
	fs.StringVar(&c.file, "forward-config", "", `JSON file declaring forwarders: [{"name","queue","upstream",...}] (env COMB_FORWARD_CONFIG)`)
	m.setting(fs, "forward-config", "")
	return c
}

// declared returns every forwarder of the flags and the config file.
func (c *forwardConfig) declared() ([]forwardSpec, error) {
	var specs []forwardSpec
	for _, v := range c.flags {
		s, err := parseForwardSpec(v)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	if c.file != "" {
		b, err := os.ReadFile(c.file)
		if err != nil {
			return nil, fmt.Errorf("--forward-config: %w", err)
		}
		var fromFile []forwardSpec
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fromFile); err != nil {
			return nil, fmt.Errorf("--forward-config %s: %w", c.file, err)
		}
		specs = append(specs, fromFile...)
	}
	for i := range specs {
		if name, ok := strings.CutPrefix(specs[i].Token, "$"); ok {
			specs[i].Token = c.envTok(name)
		}
	}
	return specs, nil
}

// start declares the configured forwarders (replacing their stored
// definitions, keeping their state) and starts every stored one.
// check reads the declared forwarders and checks the settings, before
// serve opens anything.
func (c *forwardConfig) check() ([]forwardSpec, error) {
	specs, err := c.declared()
	if err != nil {
		return nil, usageErrorf("%w", err)
	}
	if c.maxBackoff <= 0 || c.poll <= 0 {
		return nil, usageErrorf("--forward-max-backoff and --forward-poll must be positive")
	}
	if len(c.deviceID) >= combtype.ForwarderMaxIDPrefix {
		return nil, usageErrorf("--device-id: at most %d bytes", combtype.ForwarderMaxIDPrefix-1)
	}
	// Refused before the database is opened, so a refused start leaves no
	// file; start declares them again, with the runner's defaults.
	for _, s := range specs {
		if err := broker.NormalizeForwarder(s.forwarder()); err != nil {
			return nil, usageErrorf("forwarder %q: %w", s.Name, err)
		}
	}
	return specs, nil
}

func (c *forwardConfig) start(ctx context.Context, b *broker.Broker, specs []forwardSpec, log *slog.Logger) (*forward.Runner, error) {
	r := forward.New(b, forward.Options{Logger: log, MaxBackoff: c.maxBackoff, Poll: c.poll, DeviceID: c.deviceID})
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	for _, s := range specs {
		if _, err := r.Declare(ctx, s.forwarder()); err != nil {
			r.Stop()
			return nil, fmt.Errorf("forwarder %q: %w", s.Name, err)
		}
	}
	return r, nil
}

const forwardLong = `Manages the forwarders of a running server: push forwarders drain a local
queue (or every queue matching a glob) to an upstream broker's queue; pull
forwarders feed a local queue from an upstream consumer group. Needs the
admin role.`

// forwardCmd is "comb forward" and its actions.
func (m *App) forwardCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "forward",
		Short: "List, create, pause, resume or delete forwarders",
		Long:  forwardLong,
		Args:  cobra.NoArgs,
	}
	cl := m.apiFlags(cmd)
	show := func(verb string, list bool, method, suffix string) func(*cobra.Command, []string) error {
		return m.run(func(cmd *cobra.Command, args []string) error {
			asJSON, err := cl.asJSON()
			if err != nil {
				return err
			}
			path := "/api/v1/forwarders"
			if len(args) == 1 {
				path += "/" + url.PathEscape(args[0]) + suffix
			}
			body, err := cl.do(cmd.Context(), method, path, nil)
			if err != nil {
				return err
			}
			return m.printForwarders(verb, list, body, asJSON)
		})
	}
	cmd.AddCommand(&cobra.Command{Use: "list", Short: "List the forwarders with their lag and state", Args: cobra.NoArgs,
		RunE: show("list", true, http.MethodGet, "")})
	cmd.AddCommand(&cobra.Command{Use: "show NAME", Short: "Show one forwarder", Args: cobra.ExactArgs(1),
		RunE: show("show", false, http.MethodGet, "")})
	for _, verb := range []string{"pause", "resume"} {
		cmd.AddCommand(&cobra.Command{Use: verb + " NAME", Short: strings.ToUpper(verb[:1]) + verb[1:] + " a forwarder", Args: cobra.ExactArgs(1),
			RunE: show(verb, false, http.MethodPost, "/"+verb)})
	}
	cmd.AddCommand(&cobra.Command{Use: "delete NAME", Short: "Delete a forwarder (its upstream keeps what it got)", Args: cobra.ExactArgs(1),
		RunE: show("delete", false, http.MethodDelete, "")})

	var spec forwardSpec
	create := &cobra.Command{
		Use:   "create --name N --queue Q --upstream URL",
		Short: "Create a forwarder",
		Args:  cobra.NoArgs,
	}
	fs := create.Flags()
	fs.StringVar(&spec.Name, "name", "", "forwarder name (required)")
	fs.StringVar(&spec.Queue, "queue", "", "local queue name or glob (required)")
	fs.StringVar(&spec.Upstream, "upstream", "", "upstream base URL (required)")
	fs.StringVar(&spec.Direction, "direction", "push", "push (local -> upstream) or pull (upstream -> local)")
	fs.StringVar(&spec.UpstreamQueue, "upstream-queue", "", "upstream queue (default: the local name)")
	fs.StringVar(&spec.Token, "upstream-token", "", "bearer token for the upstream (--token is the one for this server)")
	fs.StringVar(&spec.ConsumerGroup, "consumer-group", "", "consumer group (default comb-forward.NAME)")
	fs.IntVar(&spec.Batch, "batch", 0, "messages per upstream request (default 500)")
	fs.StringVar(&spec.IDPrefix, "id-prefix", "", "put before each transactionId sent upstream (default DEVICE-ID:; none: send them as they are)")
	for _, f := range []string{"name", "queue", "upstream"} {
		_ = create.MarkFlagRequired(f)
	}
	create.RunE = m.run(func(cmd *cobra.Command, args []string) error {
		asJSON, err := cl.asJSON()
		if err != nil {
			return err
		}
		body, err := cl.do(cmd.Context(), http.MethodPost, "/api/v1/forwarders", spec)
		if err != nil {
			return err
		}
		return m.printForwarders("create", false, body, asJSON)
	})
	cmd.AddCommand(create)
	return cmd
}

// printForwarders prints a reply of one forwarder, or of the list, as a
// table or as the server's JSON.
func (m *App) printForwarders(verb string, list bool, body []byte, asJSON bool) error {
	if asJSON {
		return printJSON(m.Stdout, body)
	}
	if verb == "delete" {
		_, err := fmt.Fprintln(m.Stdout, "deleted")
		return err
	}
	var rows []forwarderRow
	if list {
		var reply struct {
			Forwarders []forwarderRow `json:"forwarders"`
		}
		if err := json.Unmarshal(body, &reply); err != nil {
			return fmt.Errorf("forward list: decode reply: %w", err)
		}
		rows = reply.Forwarders
	} else {
		var row forwarderRow
		if err := json.Unmarshal(body, &row); err != nil {
			return fmt.Errorf("forward %s: decode reply: %w", verb, err)
		}
		rows = []forwarderRow{row}
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDIRECTION\tQUEUE\tUPSTREAM\tSTATE\tLAG\tLAG AGE\tOLDEST\tFORWARDED\tDLQ\tEVICTED\tLAST SUCCESS\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", r.Name, r.Direction, r.Queue,
			r.Upstream+"/"+cmp.Or(r.UpstreamQueue, r.Queue), r.State, r.Lag, seconds(r.LagSeconds),
			seconds(r.OldestAgeSeconds), r.Forwarded, r.DeadLettered, r.Evicted,
			cmp.Or(r.LastSuccessAt, "-"), lastError(r))
	}
	return tw.Flush()
}

// lastError is the last error with its time, "-" when there is none.
func lastError(r forwarderRow) string {
	if r.LastError == "" {
		return "-"
	}
	return r.LastErrorAt + " " + r.LastError
}

// seconds prints a duration in seconds for the table, "-" when unknown.
func seconds(s float64) string {
	if s < 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

type forwarderRow struct {
	Name             string  `json:"name"`
	Direction        string  `json:"direction"`
	Queue            string  `json:"queue"`
	Upstream         string  `json:"upstream"`
	UpstreamQueue    string  `json:"upstreamQueue"`
	State            string  `json:"state"`
	Lag              int64   `json:"lag"`
	LagSeconds       float64 `json:"lagSeconds"`
	OldestAgeSeconds float64 `json:"oldestUnforwardedAgeSeconds"`
	Forwarded        int64   `json:"forwarded"`
	DeadLettered     int64   `json:"deadLettered"`
	Evicted          int64   `json:"evicted"`
	LastSuccessAt    string  `json:"lastSuccessAt"`
	LastError        string  `json:"lastError"`
	LastErrorAt      string  `json:"lastErrorAt"`
}
