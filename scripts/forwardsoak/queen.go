package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// runQueen starts a Queen and c.devices comb processes, each with a
// paused push forwarder of queue telemetry into Queen's telemetry, pushes
// c.n messages into each device (transactionIds r-0, r-1, ... on every
// device, partitions p0..), resumes every forwarder at once, kills Queen
// once when 40% has arrived, and checks what Queen holds.
func runQueen(c config) error {
	dir, err := os.MkdirTemp("", "forwardsoak-queen")
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
	kit := filepath.Join(c.queen, "run.sh")
	qdir := filepath.Join(dir, "queen")
	queen := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{kit}, append(args, qdir)...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("run.sh %s: %w\n%s", args[0], err, out.String())
		}
		return out.String(), err
	}
	defer queen("stop")
	out, err := queen("start")
	if err != nil {
		return err
	}
	var queenURL string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "QUEEN_URL="); ok {
			queenURL = v
		}
	}
	if queenURL == "" {
		return fmt.Errorf("run.sh start printed no QUEEN_URL:\n%s", out)
	}
	fmt.Printf("queen: %s\n", queenURL)

	devs := make([]*server, c.devices)
	for i := range devs {
		devs[i] = &server{name: fmt.Sprintf("dev-%02d", i), addr: freeAddr(), db: filepath.Join(dir, fmt.Sprintf("dev-%02d.db", i)),
			bin: c.bin, args: []string{"--device-id", fmt.Sprintf("dev-%02d", i), "--forward-max-backoff", "1s"}}
		if err := devs[i].start(dir); err != nil {
			return err
		}
		defer devs[i].kill()
		base := "http://" + devs[i].addr
		if err := createForwarder(base, map[string]any{"name": "up", "queue": "telemetry", "upstream": queenURL,
			"batch": c.batch, "paused": true}); err != nil {
			return err
		}
		for start := 0; start < c.n; start += c.pushBatch {
			var items []map[string]any
			for seq := start; seq < min(start+c.pushBatch, c.n); seq++ {
				items = append(items, map[string]any{"queue": "telemetry", "partition": fmt.Sprintf("p%d", seq%c.partitions),
					"transactionId": fmt.Sprintf("r-%d", seq), "payload": map[string]int{"device": i, "seq": seq}})
			}
			if _, err := call(http.MethodPost, base+"/api/v1/push", map[string]any{"items": items}); err != nil {
				return err
			}
		}
	}
	total := int64(c.devices * c.n)
	fmt.Printf("loaded: %d devices x %d messages, the same transactionIds on each, %d partitions\n", c.devices, c.n, c.partitions)
	lag := func() int64 {
		var sum int64
		for _, d := range devs {
			l, err := lagOf("http://"+d.addr, "up")
			if err != nil {
				return -1
			}
			sum += l
		}
		return sum
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, d := range devs {
		wg.Add(1)
		go func(base string) {
			defer wg.Done()
			call(http.MethodPost, base+"/api/v1/forwarders/up/resume", nil)
		}("http://" + d.addr)
	}
	wg.Wait()
	for l := lag(); l < 0 || l > total*6/10; l = lag() {
		if time.Since(t0) > 10*time.Minute {
			return fmt.Errorf("lag %d after 10 minutes", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("kill -9 queen at lag %d of %d, %v after the start\n", lag(), total, time.Since(t0).Round(time.Millisecond))
	if _, err := queen("kill"); err != nil {
		return err
	}
	tk := time.Now()
	if _, err := queen("start-queen"); err != nil {
		return err
	}
	fmt.Printf("queen back in %v\n", time.Since(tk).Round(time.Millisecond))
	for l := lag(); l != 0; l = lag() {
		if time.Since(t0) > 20*time.Minute {
			return fmt.Errorf("lag %d after 20 minutes", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(t0)
	fmt.Printf("forwarded: %d messages from %d devices in %v (%.0f msg/s), through one Queen kill\n", total, c.devices,
		took.Round(time.Millisecond), float64(total)/took.Seconds())
	for _, d := range devs {
		b, _ := call(http.MethodGet, "http://"+d.addr+"/api/v1/forwarders/up", nil)
		var st struct {
			Forwarded    int64   `json:"forwarded"`
			DeadLettered int64   `json:"deadLettered"`
			Duplicates   int64   `json:"duplicates"`
			LagSeconds   float64 `json:"lagSeconds"`
		}
		json.Unmarshal(b, &st)
		fmt.Printf("  %s: forwarded %d, dead-lettered %d, answered duplicate %d, last lag %.3fs\n", d.name, st.Forwarded,
			st.DeadLettered, st.Duplicates, st.LagSeconds)
	}
	return checkQueen(queenURL, c)
}

// checkQueen drains Queen's telemetry partition by partition with a new
// group and counts, per device, what is lost, duplicated and out of order.
func checkQueen(queenURL string, c config) error {
	type key struct{ dev, seq int }
	seen := map[key]int{}
	var delivered, outOfOrder, foreign int
	for p := range c.partitions {
		part := fmt.Sprintf("p%d", p)
		last := map[int]int{}
		q := url.Values{"batch": {"1000"}, "wait": {"false"}, "consumerGroup": {"verify"}, "subscriptionMode": {"all"}}
		popURL := queenURL + "/api/v1/pop/queue/telemetry/partition/" + part + "?" + q.Encode()
		for empty := 0; empty < 3; {
			b, err := call(http.MethodGet, popURL, nil)
			if err != nil {
				return err
			}
			var reply struct {
				Messages []struct {
					ID          string `json:"transactionId"`
					PartitionID string `json:"partitionId"`
					LeaseID     string `json:"leaseId"`
					Data        struct {
						Device int `json:"device"`
						Seq    int `json:"seq"`
					} `json:"data"`
				} `json:"messages"`
			}
			if len(b) > 0 {
				if err := json.Unmarshal(b, &reply); err != nil {
					return fmt.Errorf("pop: %w", err)
				}
			}
			if len(reply.Messages) == 0 {
				empty++
				time.Sleep(200 * time.Millisecond)
				continue
			}
			empty = 0
			var acks []map[string]any
			for _, m := range reply.Messages {
				delivered++
				k := key{m.Data.Device, m.Data.Seq}
				if m.ID != fmt.Sprintf("dev-%02d:r-%d", k.dev, k.seq) {
					foreign++
				}
				seen[k]++
				if prev, ok := last[k.dev]; ok && k.seq <= prev {
					outOfOrder++
				}
				last[k.dev] = k.seq
				acks = append(acks, map[string]any{"transactionId": m.ID, "partitionId": m.PartitionID, "leaseId": m.LeaseID})
			}
			if _, err := call(http.MethodPost, queenURL+"/api/v1/ack/batch", map[string]any{"acknowledgments": acks,
				"consumerGroup": "verify"}); err != nil {
				return err
			}
		}
	}
	lost, dup := 0, 0
	for d := range c.devices {
		for s := range c.n {
			switch n := seen[key{d, s}]; {
			case n == 0:
				lost++
			case n > 1:
				dup += n - 1
			}
		}
	}
	fmt.Printf("queen holds %d messages: %d distinct of %d sent; lost %d, duplicated %d, out of order %d, wrong transactionId %d\n",
		delivered, len(seen), c.devices*c.n, lost, dup, outOfOrder, foreign)
	if lost+dup+outOfOrder+foreign > 0 || len(seen) != c.devices*c.n {
		return fmt.Errorf("not every message arrived exactly once in order")
	}
	return nil
}
