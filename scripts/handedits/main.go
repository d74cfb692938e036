// Command handedits edits a served comb database the way a user with the
// sqlite3 shell or a DB browser might: every column of every table set
// to values of the wrong type, empty values and the ends of int64, and
// every table's rows deleted, one edit per fresh `comb serve` on a copy
// of the same database. After each edit it calls the routes (listings,
// status, metrics, pops, streams, snapshots, a seek, a push of a stored
// and of a new transactionId, a queue delete) and reports every answer
// of 500 or more, and a server that exited. Edits SQLite refuses itself
// (comb's tables are STRICT, with CHECKs and a trigger) are counted and
// not called further.
//
//	go build -o /tmp/comb . && go run ./scripts/handedits -comb /tmp/comb
//	go run ./scripts/handedits -comb /tmp/comb -tables segments,partitions -values "0,-1"
//
// It exits 1 when it found anything.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// defaultValues are the values each column is set to; DELETE deletes the
// table's rows instead (once a table).
const defaultValues = `'x'|x'00ff'|NULL|1.5|-1|0|1000000|-1000000|9223372036854775807|-9223372036854775808|'{}'|''|x''|DELETE`

func main() {
	comb := flag.String("comb", "comb", "path of the comb binary to run")
	sqlite3 := flag.String("sqlite3", "sqlite3", "path of the sqlite3 shell")
	tables := flag.String("tables", "", "comma-separated tables to edit (default: all)")
	values := flag.String("values", defaultValues, "|-separated SQL values to set each column to; DELETE deletes the rows")
	flag.Parse()
	dir, err := os.MkdirTemp("", "comb-handedits-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	r := &run{comb: *comb, sqlite3: *sqlite3, dir: dir, client: &http.Client{Timeout: 30 * time.Second}}
	base := filepath.Join(dir, "base.db")
	if err := r.seed(base); err != nil {
		fail(fmt.Errorf("seed: %w", err))
	}
	names, err := r.sql(base, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		fail(err)
	}
	var findings []string
	edits, refused := 0, 0
	for _, table := range strings.Fields(names) {
		if *tables != "" && !slices.Contains(strings.Split(*tables, ","), table) {
			continue
		}
		cols, err := r.sql(base, `SELECT name FROM pragma_table_info('`+table+`')`)
		if err != nil {
			fail(err)
		}
		deleted := false
		for _, col := range strings.Fields(cols) {
			for _, v := range strings.Split(*values, "|") {
				stmt := "UPDATE " + table + " SET " + col + " = " + v
				if v == "DELETE" {
					if deleted {
						continue
					}
					deleted, stmt = true, "DELETE FROM "+table
				}
				edits++
				found, wasRefused, err := r.edit(base, stmt)
				if err != nil {
					fail(fmt.Errorf("%s: %w", stmt, err))
				}
				if wasRefused {
					refused++
				}
				for _, f := range found {
					findings = append(findings, stmt+": "+f)
				}
			}
		}
	}
	fmt.Printf("%d edits, %d refused by SQLite, %d findings\n", edits, refused, len(findings))
	for _, f := range findings {
		fmt.Println("  " + f)
	}
	if len(findings) > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "handedits:", err)
	os.Exit(2)
}

type run struct {
	comb, sqlite3, dir string
	client             *http.Client
	queryID            string
	n                  int
}

// server is a running comb serve.
type server struct {
	cmd  *exec.Cmd
	url  string
	exit chan error
}

func (r *run) serve(db string) (*server, error) {
	cmd := exec.Command(r.comb, "serve", "--addr", "127.0.0.1:0", "--db", db, "--retention-interval", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", r.comb, err)
	}
	s := &server{cmd: cmd, exit: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var line struct {
				Ready bool   `json:"ready"`
				URL   string `json:"url"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Ready {
				ready <- line.URL
			}
		}
		s.exit <- cmd.Wait()
	}()
	select {
	case s.url = <-ready:
		return s, nil
	case err := <-s.exit:
		return nil, fmt.Errorf("comb serve exited before it was ready: %v", err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("comb serve not ready after 30 s")
	}
}

// stop ends the server with SIGTERM (a clean close: the WAL is written
// into the file) and waits for it.
func (s *server) stop() error {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-s.exit:
		return err
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		return errors.New("comb serve did not stop within 30 s")
	}
}

func (r *run) do(s *server, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// seed makes the database every edit starts from: two queues' worth of
// rows of every kind the routes read.
func (r *run) seed(db string) error {
	s, err := r.serve(db)
	if err != nil {
		return err
	}
	push := func(items ...map[string]any) error {
		st, b, err := r.do(s, "POST", "/api/v1/push", map[string]any{"items": items})
		if err == nil && st != http.StatusCreated {
			err = fmt.Errorf("push: %d %s", st, b)
		}
		return err
	}
	steps := []func() error{
		func() error {
			return push(map[string]any{"queue": "q", "partition": "p1", "payload": 1, "transactionId": "t1"},
				map[string]any{"queue": "q", "partition": "p2", "payload": 2}, map[string]any{"queue": "r", "payload": 3})
		},
		func() error {
			for _, g := range []string{"g1", "g2"} {
				if _, _, err := r.do(s, "GET", "/api/v1/pop/queue/q?consumerGroup="+g+"&batch=10&partitions=5&autoAck=true", nil); err != nil {
					return err
				}
			}
			return nil
		},
		func() error { return push(map[string]any{"queue": "q", "partition": "p1", "payload": 4}) },
		func() error {
			_, _, err := r.do(s, "GET", "/api/v1/pop/queue/q?consumerGroup=g3&batch=1", nil) // a lease left open
			return err
		},
		func() error {
			_, _, err := r.do(s, "POST", "/api/v1/consumer-groups/g1/queues/q/snapshots", map[string]any{"name": "s1"})
			return err
		},
		func() error {
			st, b, err := r.do(s, "POST", "/streams/v1/queries", map[string]any{"name": "sq", "source_queue": "q", "config_hash": "h"})
			if err != nil {
				return err
			}
			var reg struct {
				QueryID string `json:"query_id"`
			}
			if err := json.Unmarshal(b, &reg); err != nil || reg.QueryID == "" {
				return fmt.Errorf("register a stream query: %d %s", st, b)
			}
			r.queryID = reg.QueryID
			_, _, err = r.do(s, "POST", "/streams/v1/cycle", map[string]any{"query_id": r.queryID, "partition_id": "p1",
				"consumer_group": "", "state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": map[string]any{"v": 1}}}})
			return err
		},
		func() error {
			_, _, err := r.do(s, "POST", "/api/v1/traces", map[string]any{"transactionId": "t1", "queue": "q", "data": map[string]any{"a": 1}})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			s.stop()
			return err
		}
	}
	return s.stop()
}

// edit serves a copy of base, makes stmt with sqlite3 while it serves,
// and calls the routes; found lists what answered 500 or more.
func (r *run) edit(base, stmt string) (found []string, refused bool, err error) {
	r.n++
	db := filepath.Join(r.dir, fmt.Sprintf("e%d.db", r.n))
	data, err := os.ReadFile(base)
	if err != nil {
		return nil, false, err
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		return nil, false, err
	}
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm", ".reserve"} {
			os.Remove(db + suffix)
		}
	}()
	s, err := r.serve(db)
	if err != nil {
		return nil, false, err
	}
	defer func() {
		s.cmd.Process.Kill()
		<-s.exit
	}()
	if out, err := exec.Command(r.sqlite3, db, ".timeout 10000", stmt).CombinedOutput(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return nil, false, fmt.Errorf("sqlite3: %w", err)
		}
		_ = out // refused: a constraint, a STRICT type, comb's trigger
		return nil, true, nil
	}
	type call struct {
		method, path string
		body         any
	}
	calls := []call{}
	for _, p := range []string{"/api/v1/consumer-groups", "/api/v1/consumer-groups/g1",
		"/api/v1/consumer-groups/lagging?minLagSeconds=0", "/api/v1/resources/overview", "/api/v1/resources/queues",
		"/api/v1/resources/queues/q", "/api/v1/resources/namespaces", "/api/v1/resources/tasks", "/api/v1/status",
		"/api/v1/status/queues", "/api/v1/status/queues/q", "/api/v1/status/queues/q/messages", "/api/v1/status/analytics",
		"/api/v1/status/buffers", "/api/v1/messages", "/api/v1/messages?queue=q", "/metrics", "/metrics/prometheus",
		"/api/v1/dlq", "/api/v1/snapshots", "/api/v1/snapshots/s1", "/api/v1/quarantine",
		"/api/v1/analytics/system-metrics", "/api/v1/analytics/worker-metrics", "/api/v1/analytics/queue-lag",
		"/api/v1/analytics/queue-ops", "/api/v1/analytics/retention", "/api/v1/system/maintenance",
		"/api/v1/system/shared-state", "/api/v1/system/backup", "/health",
		"/api/v1/pop/queue/q?consumerGroup=g4&batch=5&partitions=5", "/api/v1/pop/queue/q?consumerGroup=g1&batch=5",
		"/api/v1/pop/queue/q/partition/p1?consumerGroup=g2&batch=5", "/api/v1/pop?namespace=&consumerGroup=g5&batch=2"} {
		calls = append(calls, call{"GET", p, nil})
	}
	calls = append(calls,
		call{"POST", "/streams/v1/state/get", map[string]any{"query_id": r.queryID, "partition_id": "p1", "keys": []string{"k"}}},
		call{"POST", "/streams/v1/queries", map[string]any{"name": "sq", "source_queue": "q", "config_hash": "h"}},
		call{"POST", "/api/v1/consumer-groups/g1/queues/q/seek", map[string]any{"snapshot": "s1"}},
		call{"POST", "/api/v1/consumer-groups/g2/queues/q/snapshots", map[string]any{"name": "s2"}},
		call{"POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "q", "partition": "p1", "payload": 9, "transactionId": "t1"}}}},
		call{"POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "q", "partition": "p1", "payload": 10}}}},
		call{"DELETE", "/api/v1/resources/queues/q", nil},
	)
	for _, c := range calls {
		st, b, err := r.do(s, c.method, c.path, c.body)
		switch {
		case err != nil:
			found = append(found, fmt.Sprintf("%s %s: %v", c.method, c.path, err))
		case st >= 500:
			found = append(found, fmt.Sprintf("%s %s: %d %.160s", c.method, c.path, st, b))
		}
	}
	select {
	case err := <-s.exit:
		s.exit <- err
		found = append(found, fmt.Sprintf("the server exited: %v", err))
	default:
	}
	return found, false, nil
}

func (r *run) sql(db, query string) (string, error) {
	out, err := exec.Command(r.sqlite3, db, query).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sqlite3 %q: %v: %s", query, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
