package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
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
	specs      []forwardSpec
	file       *string
	maxBackoff *time.Duration
	poll       *time.Duration
	deviceID   *string
	envTok     func(string) string
}

// forwardFlags adds --forward (repeatable) and --forward-config to fs.
func (m *App) forwardFlags(fs *flag.FlagSet) *forwardConfig {
	c := &forwardConfig{envTok: m.Getenv}
	fs.Func("forward", "declare a forwarder, repeatable: name=N,queue=Q,upstream=URL[,direction=push|pull][,upstreamQueue=U]"+
		"[,token=T][,consumerGroup=G][,batch=B][,idPrefix=P|none]; queue may be a glob (push); token=$VAR reads the environment", func(v string) error {
		s, err := parseForwardSpec(v)
		if err != nil {
			return err
		}
		c.specs = append(c.specs, s)
		return nil
	})
	c.maxBackoff = fs.Duration("forward-max-backoff", forward.DefaultMaxBackoff, "longest wait between a forwarder's retries while its upstream fails")
	c.poll = fs.Duration("forward-poll", forward.DefaultPoll, "how long a forwarder's pop waits for messages")
	c.deviceID = fs.String("device-id", m.env("COMB_DEVICE_ID", ""), "this device's name in the transactionIds its push forwarders send upstream "+
		"(default idPrefix DEVICE-ID:); default: one chosen at first start from the host name and kept in the database (env COMB_DEVICE_ID)")
	c.file = fs.String("forward-config", m.env("COMB_FORWARD_CONFIG", ""), `JSON file declaring forwarders: [{"name","queue","upstream",...}] (env COMB_FORWARD_CONFIG)`)
	return c
}

// declared returns every forwarder of the flags and the config file.
func (c *forwardConfig) declared() ([]forwardSpec, error) {
	specs := append([]forwardSpec(nil), c.specs...)
	if *c.file != "" {
		b, err := os.ReadFile(*c.file)
		if err != nil {
			return nil, fmt.Errorf("--forward-config: %w", err)
		}
		var fromFile []forwardSpec
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fromFile); err != nil {
			return nil, fmt.Errorf("--forward-config %s: %w", *c.file, err)
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
func (c *forwardConfig) start(ctx context.Context, b *broker.Broker, log *slog.Logger) (*forward.Runner, error) {
	specs, err := c.declared()
	if err != nil {
		return nil, err
	}
	if *c.maxBackoff <= 0 || *c.poll <= 0 {
		return nil, fmt.Errorf("--forward-max-backoff and --forward-poll must be positive")
	}
	if len(*c.deviceID) >= combtype.ForwarderMaxIDPrefix {
		return nil, fmt.Errorf("--device-id: at most %d bytes", combtype.ForwarderMaxIDPrefix-1)
	}
	r := forward.New(b, forward.Options{Logger: log, MaxBackoff: *c.maxBackoff, Poll: *c.poll, DeviceID: *c.deviceID})
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

const forwardUsage = `Usage:
  comb forward list [--json]
  comb forward show NAME [--json]
  comb forward create --name N --queue Q --upstream URL [--direction push|pull]
                      [--upstream-queue U] [--token T] [--consumer-group G] [--batch B]
                      [--id-prefix P|none]
  comb forward pause NAME | resume NAME | delete NAME

Manages the forwarders of a running server: push forwarders drain a local
queue (or every queue matching a glob) to an upstream broker's queue; pull
forwarders feed a local queue from an upstream consumer group. Talks to the
server at --url (env COMB_URL, default http://127.0.0.1:6632), with
Authorization: Bearer $COMB_TOKEN when set; needs the admin role.

Flags:
`

// forwardCmd runs "comb forward".
func (m *App) forwardCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("forward", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, forwardUsage); fs.PrintDefaults() }
	cl := m.apiFlags(fs)
	asJSON := fs.Bool("json", false, "print the server's JSON reply")
	var spec forwardSpec
	fs.StringVar(&spec.Name, "name", "", "create: forwarder name")
	fs.StringVar(&spec.Queue, "queue", "", "create: local queue name or glob")
	fs.StringVar(&spec.Upstream, "upstream", "", "create: upstream base URL")
	fs.StringVar(&spec.Direction, "direction", "push", "create: push (local -> upstream) or pull (upstream -> local)")
	fs.StringVar(&spec.UpstreamQueue, "upstream-queue", "", "create: upstream queue (default: the local name)")
	fs.StringVar(&spec.Token, "token", "", "create: bearer token for the upstream")
	fs.StringVar(&spec.ConsumerGroup, "consumer-group", "", "create: consumer group (default comb-forward.NAME)")
	fs.IntVar(&spec.Batch, "batch", 0, "create: messages per upstream request (default 500)")
	fs.StringVar(&spec.IDPrefix, "id-prefix", "", "create: put before each transactionId sent upstream (default DEVICE-ID:; none: send them as they are)")
	if len(args) == 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	verb := args[0]
	// Flags may come before or after the forwarder's name.
	var names []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		names, rest = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	one := func() (string, error) {
		if len(names) != 1 {
			fs.Usage()
			return "", fmt.Errorf("forward %s: want one forwarder name", verb)
		}
		return "/api/v1/forwarders/" + url.PathEscape(names[0]), nil
	}
	var (
		body []byte
		err  error
	)
	switch verb {
	case "list", "create":
		if len(names) > 0 {
			return fmt.Errorf("forward %s: unexpected argument %q", verb, names[0])
		}
	}
	switch verb {
	case "list":
		body, err = cl.do(ctx, http.MethodGet, "/api/v1/forwarders", nil)
	case "show":
		var p string
		if p, err = one(); err == nil {
			body, err = cl.do(ctx, http.MethodGet, p, nil)
		}
	case "create":
		body, err = cl.do(ctx, http.MethodPost, "/api/v1/forwarders", spec)
	case "pause", "resume":
		var p string
		if p, err = one(); err == nil {
			body, err = cl.do(ctx, http.MethodPost, p+"/"+verb, nil)
		}
	case "delete":
		var p string
		if p, err = one(); err == nil {
			body, err = cl.do(ctx, http.MethodDelete, p, nil)
		}
	default:
		fs.Usage()
		return fmt.Errorf("forward: unknown action %q", verb)
	}
	if err != nil {
		return err
	}
	if *asJSON || verb == "delete" {
		_, err := fmt.Fprintf(m.Stdout, "%s\n", bytes.TrimSpace(body))
		return err
	}
	var rows []forwarderRow
	if verb == "list" {
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
