// Command forwardsoak checks forwarding between two comb serve processes on
// loopback, at full size, and measures it.
//
//  1. Baseline: the same batches a forwarder sends (-batch messages each,
//     one request at a time) are pushed straight into the upstream.
//  2. Clean forward: the same messages are pushed into the device with its
//     forwarder paused, then it is resumed and timed until its lag is 0.
//  3. Chaos: with the upstream stopped, -n messages go into the device;
//     the upstream starts and gets -pull commands for the device; the
//     upstream is killed (SIGKILL) twice mid-stream and the device once.
//     At the end the upstream must hold exactly the device's messages and
//     the device exactly the commands: none missing, none stored twice, in
//     order per partition.
//
// With -queen KIT (the folder holding Queen's run.sh), it runs instead
// against a real Queen on PostgreSQL: -devices comb processes each push -n
// messages with the same client-chosen transactionIds into one Queen queue
// and the same partitions, Queen is killed (SIGKILL) once mid-stream, and
// Queen must end with every device's messages exactly once, in order per
// device and partition (see queen.go).
//
// Examples:
//
//	go run ./scripts/forwardsoak                      # 100k each way
//	go run ./scripts/forwardsoak -n 20000 -pull 20000
//	go run ./scripts/forwardsoak -queen ../shared/queen -devices 10 -n 10000
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

type config struct {
	n, pull, batch, partitions, pushBatch int
	bin, src                              string
	keep                                  bool
	queen                                 string
	devices                               int
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 100000, "messages pushed into the device while the upstream is down")
	flag.IntVar(&c.pull, "pull", 100000, "commands pushed into the upstream for the device")
	flag.IntVar(&c.batch, "batch", 500, "forwarder batch (messages per upstream request)")
	flag.IntVar(&c.pushBatch, "push-batch", 500, "messages per request when loading a broker")
	flag.IntVar(&c.partitions, "partitions", 8, "partitions per queue")
	flag.StringVar(&c.bin, "bin", "", "comb binary (default: build from -src)")
	flag.StringVar(&c.src, "src", ".", "module root to build comb from")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	flag.StringVar(&c.queen, "queen", "", "folder of Queen's run.sh: forward from -devices combs into a real Queen instead")
	flag.IntVar(&c.devices, "devices", 10, "with -queen: comb processes forwarding into the one Queen")
	flag.Parse()
	runner := run
	if c.queen != "" {
		runner = runQueen
	}
	if err := runner(c); err != nil {
		fmt.Fprintln(os.Stderr, "forwardsoak:", err)
		os.Exit(1)
	}
	fmt.Println("PASS")
}

type msg struct {
	ID        string `json:"transactionId"`
	Partition string `json:"partition"`
	Seq       int    `json:"seq"`
}

type server struct {
	name, addr, db, bin string
	args                []string
	cmd                 *exec.Cmd
	exited              chan struct{}
}

var client = &http.Client{Timeout: time.Minute}

func run(c config) error {
	dir, err := os.MkdirTemp("", "forwardsoak")
	if err != nil {
		return err
	}
	if c.keep {
		fmt.Println("dir:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if c.bin == "" {
		c.bin = filepath.Join(dir, "comb")
		build := exec.Command("go", "build", "-o", c.bin, ".")
		build.Dir, build.Stderr = c.src, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	up := &server{name: "upstream", addr: freeAddr(), db: filepath.Join(dir, "upstream.db"), bin: c.bin}
	dev := &server{name: "device", addr: freeAddr(), db: filepath.Join(dir, "device.db"), bin: c.bin,
		args: []string{"--forward-max-backoff", "1s", "--device-id", "soak-dev"}}
	for _, s := range []*server{up, dev} {
		if err := s.start(dir); err != nil {
			return err
		}
		defer s.kill()
	}
	upURL, devURL := "http://"+up.addr, "http://"+dev.addr

	// 1 and 2: baseline and clean forward of the same batches.
	clean := makeMessages(c.n, c.partitions)
	t0 := time.Now()
	if err := pushAll(upURL, "baseline", clean, c.batch); err != nil {
		return err
	}
	base := time.Since(t0)
	if err := createForwarder(devURL, map[string]any{"name": "clean", "queue": "clean", "upstream": upURL,
		"batch": c.batch, "paused": true}); err != nil {
		return err
	}
	if err := pushAll(devURL, "clean", clean, c.pushBatch); err != nil {
		return err
	}
	t0 = time.Now()
	if _, err := call(http.MethodPost, devURL+"/api/v1/forwarders/clean/resume", nil); err != nil {
		return err
	}
	if err := waitLag(devURL, "clean", 0, 10*time.Minute); err != nil {
		return err
	}
	fwd := time.Since(t0)
	fmt.Printf("baseline: %d messages pushed in batches of %d in %v (%.0f msg/s)\n", c.n, c.batch, base.Round(time.Millisecond), float64(c.n)/base.Seconds())
	fmt.Printf("forward:  %d messages forwarded in batches of %d in %v (%.0f msg/s) = %.2f x baseline\n", c.n, c.batch,
		fwd.Round(time.Millisecond), float64(c.n)/fwd.Seconds(), base.Seconds()/fwd.Seconds())

	// 3: chaos. The commands wait upstream; the upstream stops; the
	// device buffers; then the upstream starts and both directions flow.
	// A pop whose reply an upstream crash swallowed stays leased upstream
	// until the lease expires; a short lease keeps that wait short.
	if _, err := call(http.MethodPost, upURL+"/api/v1/configure", map[string]any{"queue": "commands",
		"options": map[string]any{"leaseTime": 5}}); err != nil {
		return err
	}
	commands := makeMessages(c.pull, c.partitions)
	if err := pushAll(upURL, "commands", commands, c.pushBatch); err != nil {
		return err
	}
	up.kill()
	for _, f := range []map[string]any{
		{"name": "up", "queue": "telemetry", "upstream": upURL, "batch": c.batch},
		{"name": "down", "direction": "pull", "queue": "commands", "upstream": upURL, "batch": c.batch},
	} {
		if err := createForwarder(devURL, f); err != nil {
			return err
		}
	}
	telemetry := makeMessages(c.n, c.partitions)
	t0 = time.Now()
	if err := pushAll(devURL, "telemetry", telemetry, c.pushBatch); err != nil {
		return err
	}
	fmt.Printf("chaos: %d messages buffered on the device in %v with the upstream down\n", c.n, time.Since(t0).Round(time.Millisecond))
	if err := up.start(dir); err != nil {
		return err
	}
	t0 = time.Now()
	for i, step := range []struct {
		s     *server
		below int
	}{{up, c.n * 4 / 5}, {dev, c.n * 3 / 5}, {up, c.n * 2 / 5}} {
		if err := waitLag(devURL, "up", int64(step.below), 10*time.Minute); err != nil {
			return err
		}
		lag, _ := lagOf(devURL, "up")
		fmt.Printf("chaos: kill -9 %s (%d of 3) at device lag %d, %v after the upstream started\n", step.s.name, i+1, lag,
			time.Since(t0).Round(time.Millisecond))
		step.s.kill()
		if err := step.s.start(dir); err != nil {
			return err
		}
	}
	if err := waitLag(devURL, "up", 0, 10*time.Minute); err != nil {
		return err
	}
	fmt.Printf("chaos: device lag 0 %v after the upstream started\n", time.Since(t0).Round(time.Millisecond))
	if err := waitGroupLag(upURL, "comb-forward.down", 10*time.Minute); err != nil {
		return err
	}
	fmt.Printf("chaos: commands all pulled %v after the upstream started\n", time.Since(t0).Round(time.Millisecond))
	if err := checkExactly(upURL, "telemetry", telemetry, c.partitions, "soak-dev:"); err != nil {
		return err
	}
	if err := checkExactly(devURL, "commands", commands, c.partitions, ""); err != nil {
		return err
	}
	if err := checkExactly(upURL, "clean", clean, c.partitions, "soak-dev:"); err != nil {
		return err
	}
	out, _ := call(http.MethodGet, devURL+"/api/v1/forwarders", nil)
	fmt.Printf("forwarders: %s\n", out)
	return nil
}

func makeMessages(n, partitions int) []msg {
	out := make([]msg, n)
	for i := range out {
		out[i] = msg{ID: uuid.Must(uuid.NewV7()).String(), Partition: fmt.Sprintf("p%d", i%partitions), Seq: i}
	}
	return out
}

func pushAll(base, queue string, msgs []msg, batch int) error {
	for start := 0; start < len(msgs); start += batch {
		var items []map[string]any
		for _, m := range msgs[start:min(start+batch, len(msgs))] {
			items = append(items, map[string]any{"queue": queue, "partition": m.Partition, "transactionId": m.ID,
				"payload": map[string]int{"seq": m.Seq}})
		}
		if _, err := call(http.MethodPost, base+"/api/v1/push", map[string]any{"items": items}); err != nil {
			return fmt.Errorf("push to %s: %w", queue, err)
		}
	}
	return nil
}

func createForwarder(base string, f map[string]any) error {
	_, err := call(http.MethodPost, base+"/api/v1/forwarders", f)
	return err
}

func lagOf(base, name string) (int64, error) {
	b, err := call(http.MethodGet, base+"/api/v1/forwarders/"+name, nil)
	if err != nil {
		return 0, err
	}
	var st struct {
		Lag int64 `json:"lag"`
	}
	return st.Lag, json.Unmarshal(b, &st)
}

// waitLag waits until forwarder name's lag is at most below. The device
// may be restarting meanwhile: failed calls are retried.
func waitLag(base, name string, below int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		lag, err := lagOf(base, name)
		if err == nil && lag <= below {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("forwarder %s: lag %d (%v) after %v", name, lag, err, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitGroupLag(base, group string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		b, err := call(http.MethodGet, base+"/api/v1/consumer-groups", nil)
		var groups []struct {
			Name     string `json:"name"`
			TotalLag int64  `json:"totalLag"`
		}
		if err == nil && json.Unmarshal(b, &groups) == nil {
			for _, g := range groups {
				if g.Name == group && g.TotalLag == 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("group %s still lagging after %v", group, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkExactly drains queue with a fresh group and checks it holds each of
// want exactly once, its transactionId behind prefix, in order within each
// partition, and nothing else.
func checkExactly(base, queue string, want []msg, partitions int, prefix string) error {
	byID := map[string]msg{}
	for _, m := range want {
		byID[m.ID] = m
	}
	seen := map[string]bool{}
	last := map[string]int{}
	group := "verify-" + uuid.NewString()[:8]
	q := url.Values{"batch": {"1000"}, "wait": {"false"}, "consumerGroup": {group}, "subscriptionMode": {"all"}}
	popURL := base + "/api/v1/pop/queue/" + queue + "?" + q.Encode()
	for {
		b, err := call(http.MethodGet, popURL, nil)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			break
		}
		var reply struct {
			Messages []struct {
				ID          string `json:"transactionId"`
				PartitionID string `json:"partitionId"`
				Partition   string `json:"partition"`
				LeaseID     string `json:"leaseId"`
				Data        struct {
					Seq int `json:"seq"`
				} `json:"data"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(b, &reply); err != nil {
			return fmt.Errorf("pop %s: %w", queue, err)
		}
		var acks []map[string]any
		for _, m := range reply.Messages {
			id, _ := strings.CutPrefix(m.ID, prefix)
			w, ok := byID[id]
			switch {
			case !ok:
				return fmt.Errorf("%s: %s was never sent", queue, m.ID)
			case seen[id]:
				return fmt.Errorf("%s: %s delivered twice", queue, m.ID)
			case w.Partition != m.Partition || w.Seq != m.Data.Seq:
				return fmt.Errorf("%s: %s arrived in %s seq %d, sent to %s seq %d", queue, m.ID, m.Partition, m.Data.Seq, w.Partition, w.Seq)
			}
			if prev, ok := last[m.Partition]; ok && w.Seq <= prev {
				return fmt.Errorf("%s: partition %s: seq %d after %d", queue, m.Partition, w.Seq, prev)
			}
			last[m.Partition], seen[id] = w.Seq, true
			acks = append(acks, map[string]any{"transactionId": m.ID, "partitionId": m.PartitionID, "leaseId": m.LeaseID})
		}
		if _, err := call(http.MethodPost, base+"/api/v1/ack/batch", map[string]any{"acknowledgments": acks, "consumerGroup": group}); err != nil {
			return err
		}
	}
	if len(seen) != len(want) {
		return fmt.Errorf("%s: %d of %d messages arrived", queue, len(seen), len(want))
	}
	fmt.Printf("check: %s holds exactly the %d messages sent, once each, in order in each of %d partitions\n", queue, len(want), partitions)
	return nil
}

// call sends a JSON request; a non-2xx reply is an error. A 204 is an
// empty body.
func call(method, target string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, target, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, target, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (s *server) start(dir string) error {
	log, err := os.OpenFile(filepath.Join(dir, s.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(s.bin, append([]string{"serve", "--addr", s.addr, "--db", s.db}, s.args...)...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		log.Close()
		close(done)
	}(s.cmd, s.exited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := call(http.MethodGet, "http://"+s.addr+"/health", nil); err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return errors.New(s.name + " exited at start; see its log")
		default:
		}
		if time.Now().After(deadline) {
			return errors.New(s.name + " not healthy within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the exit; a stopped server is left alone.
func (s *server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.exited
}
