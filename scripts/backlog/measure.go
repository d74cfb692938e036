//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// rss samples a process's resident memory from /proc until stopped.
type rss struct {
	pid  int
	mu   sync.Mutex
	max  int64 // KiB, highest VmRSS sampled
	stop chan struct{}
	wg   sync.WaitGroup
}

func sampleRSS(pid int) *rss {
	r := &rss{pid: pid, stop: make(chan struct{})}
	r.wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if v := procStatus(pid, "VmRSS"); v > 0 {
				r.mu.Lock()
				r.max = max(r.max, v)
				r.mu.Unlock()
			}
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	})
	return r
}

func (r *rss) end() {
	close(r.stop)
	r.wg.Wait()
}

// procStatus reads one KiB field of /proc/PID/status, 0 if it cannot.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

type row struct{ what, took, rss, note string }

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func measure(ctx context.Context, db, comb, backupDir, out string, skipFiles bool, cutAt float64, reserve int64) error {
	n, err := readCount(db)
	if err != nil || n == 0 {
		return fmt.Errorf("%s: no message count beside it (built by this script?): %v", db, err)
	}
	info, err := os.Stat(db)
	if err != nil {
		return err
	}
	// The build's clock: message k was pushed at base + k*step, near
	// enough (a commit stamps its batch with one instant).
	first, last := base, base.Add(time.Duration(n-1)*step)
	var rows []row
	add := func(what string, d time.Duration, hwm int64, note string) {
		r := row{what, d.Round(time.Millisecond).String(), mib(hwm), note}
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "backlog: %s: %s, %s %s\n", r.what, r.took, r.rss, r.note)
	}
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	startLoad := load()

	// --- serve: open, seeks, pops, retention ---
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	dir, err := os.MkdirTemp("", "backlog-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ready := filepath.Join(dir, "ready")
	srv := exec.CommandContext(ctx, comb, "serve", "--db", db, "--addr", addr, "--ready-file", ready,
		"--retention-interval", "2s", "--log-format", "json")
	srv.Stdout = io.Discard
	logR, logW := io.Pipe()
	srv.Stderr = logW
	sweeps := make(chan map[string]any, 64)
	// The server's log is kept beside the output, to see what each sweep did.
	var serveLog *os.File
	if out != "" {
		if serveLog, err = os.Create(strings.TrimSuffix(out, ".md") + "-" + filepath.Base(db) + ".serve.log"); err != nil {
			return err
		}
		defer serveLog.Close()
	}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			if serveLog != nil {
				fmt.Fprintln(serveLog, sc.Text())
			}
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "retention sweep" {
				sweeps <- m
			}
		}
	}()
	start := time.Now()
	if err := srv.Start(); err != nil {
		return err
	}
	mem := sampleRSS(srv.Process.Pid)
	defer func() {
		if srv.ProcessState == nil {
			srv.Process.Kill()
			srv.Wait()
		}
	}()
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return errors.New("serve: no ready line in 5 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	pid := srv.Process.Pid
	add("open (serve start to ready line)", time.Since(start), procStatus(pid, "VmHWM"), "")

	url := "http://" + addr
	cl := &http.Client{Timeout: 10 * time.Minute}
	do := func(method, path string, body any) (time.Duration, []byte, error) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, url+path, rd)
		req.Header.Set("Content-Type", "application/json")
		t := time.Now()
		resp, err := cl.Do(req)
		if err != nil {
			return 0, nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t)
		if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNoContent {
			return d, b, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return d, b, err
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }

	// Seek by timestamp: one group, to 10%, 50%, 90% of the log's span and back.
	var seeks []time.Duration
	var each []string
	for _, f := range []float64{0.1, 0.5, 0.9, 0.3, 0.7} {
		ts := first.Add(time.Duration(f * float64(last.Sub(first)))).Format(time.RFC3339Nano)
		d, _, err := do("POST", "/api/v1/consumer-groups/seeker/queues/"+queue+"/seek", map[string]any{"timestamp": ts})
		if err != nil {
			return err
		}
		seeks = append(seeks, d)
		each = append(each, fmt.Sprintf("%.0f%%: %s", 100*f, d.Round(time.Millisecond)))
	}
	add("seek by timestamp, whole queue (median of 5)", median(seeks), procStatus(pid, "VmHWM"),
		fmt.Sprintf("%d partitions; %s", partitions, strings.Join(each, ", ")))

	// pops times count pops of group and says where in the log they
	// were: the createdAt of the first and last message received.
	pops := func(group string, count int) (time.Duration, string, error) {
		var ds []time.Duration
		got := 0
		var from, to string
		for range count {
			d, b, err := do("GET", "/api/v1/pop/queue/"+queue+"?consumerGroup="+group+"&batch=100&wait=false&autoAck=true", nil)
			if err != nil {
				return 0, "", err
			}
			var r struct {
				Messages []struct {
					CreatedAt string `json:"createdAt"`
				} `json:"messages"`
			}
			json.Unmarshal(b, &r)
			got += len(r.Messages)
			for _, m := range r.Messages {
				if from == "" || m.CreatedAt < from {
					from = m.CreatedAt
				}
				to = max(to, m.CreatedAt)
			}
			ds = append(ds, d)
		}
		return median(ds), fmt.Sprintf("%d messages, created %s to %s", got, from, to), nil
	}
	d, got, err := pops("head", 20)
	if err != nil {
		return err
	}
	add("pop b100 autoAck at the head (median of 20)", d, procStatus(pid, "VmHWM"), got)
	tailAt := first.Add(time.Duration(0.999 * float64(last.Sub(first)))).Format(time.RFC3339Nano)
	if _, _, err := do("POST", "/api/v1/consumer-groups/tail/queues/"+queue+"/seek", map[string]any{"timestamp": tailAt}); err != nil {
		return err
	}
	d, got, err = pops("tail", 20)
	if err != nil {
		return err
	}
	add("pop b100 autoAck at the tail (median of 20)", d, procStatus(pid, "VmHWM"), got)

	// Retention: keep all but the oldest 10% of the span; the sweep runs
	// every 2 s. The sweep is done when no segment older than the cut is
	// left, which sqlite3 reads from the file beside the server (a sweep's
	// log line says only what that pass did, and a long sweep is several
	// passes). The logged totals are compared with what the file lost.
	cut := first.Add(time.Duration(cutAt * float64(last.Sub(first))))
	older := fmt.Sprintf(`SELECT COALESCE(SUM(frame_count), 0), COUNT(*) FROM segments WHERE created_at < %d`, cut.UnixMicro())
	due, err := sqlite3(ctx, db, older)
	if err != nil {
		return err
	}
	totalBefore, err := sqlite3(ctx, db, `SELECT COALESCE(SUM(frame_count), 0), COUNT(*) FROM segments`)
	if err != nil {
		return err
	}
	keep := int64(time.Since(cut).Seconds())
	t0 := time.Now()
	if _, _, err := do("POST", "/api/v1/configure", map[string]any{"queue": queue,
		"options": map[string]any{"retentionEnabled": true, "retentionSeconds": keep}}); err != nil {
		return err
	}
	var removed, segs float64
	var took []string
	deadline := time.Now().Add(20 * time.Minute)
	var sweepWall time.Duration
	for {
		left, err := sqlite3(ctx, db, older)
		if err != nil {
			return err
		}
		if left[1] == 0 {
			sweepWall = time.Since(t0)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("retention: %d segments older than the cut left after 20 minutes", left[1])
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	totalAfter, err := sqlite3(ctx, db, `SELECT COALESCE(SUM(frame_count), 0), COUNT(*) FROM segments`)
	if err != nil {
		return err
	}
	// The pass that removed the last segments logs as it ends, after it
	// returned the freed pages to the file system: wait for the log to
	// account for what the file lost, for at most a minute.
	for settle := time.After(time.Minute); removed < float64(totalBefore[0]-totalAfter[0]); {
		select {
		case m := <-sweeps:
			removed += m["messages"].(float64)
			segs += m["segments"].(float64)
			took = append(took, time.Duration(m["took"].(float64)).Round(100*time.Millisecond).String())
			continue
		case <-settle:
		}
		break
	}
	add(fmt.Sprintf("retention sweep to %.0f%% of the span (configure to no segment older than the cut)", 100*cutAt), sweepWall, procStatus(pid, "VmHWM"),
		fmt.Sprintf("%d messages in %d segments were older than the cut; the file lost %d messages in %d segments; the log says %.0f in %.0f, by %d passes (%s); %.0f messages/s",
			due[0], due[1], totalBefore[0]-totalAfter[0], totalBefore[1]-totalAfter[1], removed, segs, len(took), strings.Join(took, ", "),
			float64(totalBefore[0]-totalAfter[0])/sweepWall.Seconds()))
	d, got, err = pops("head2", 20)
	if err != nil {
		return err
	}
	add("pop b100 autoAck at the new head, after retention (median of 20)", d, procStatus(pid, "VmHWM"), got)

	srv.Process.Signal(syscall.SIGTERM)
	t0 = time.Now()
	werr := srv.Wait()
	logW.Close()
	<-logDone
	mem.end()
	srvHWM := srv.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	add("serve shutdown (SIGTERM to exit)", time.Since(t0), srvHWM, fmt.Sprintf("exit %v; highest VmRSS sampled every 100 ms: %s", werr, mib(mem.max)))

	// --- check and backup, with progress, each its own process ---
	after, _ := os.Stat(db)
	if skipFiles {
		return report(db, out, info, after, n, first, last, startLoad, load(), rows)
	}
	run := func(what string, args ...string) error {
		cmd := exec.CommandContext(ctx, comb, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Stdout = io.Discard
		t := time.Now()
		err := cmd.Run()
		d := time.Since(t)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		fmt.Fprintf(os.Stderr, "%s\n", stderr.String())
		note := fmt.Sprintf("%d progress lines; last: `%s`", len(lines), lines[len(lines)-1])
		if len(lines) > 2 {
			note += fmt.Sprintf("; middle: `%s`", lines[len(lines)/2])
		}
		if ph := phases(lines); ph != "" {
			note += "; phases: " + ph
		}
		add(what, d, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, note)
		return err
	}
	if err := run("comb check --progress", "check", "--db", db, "--progress"); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if backupDir == "" {
		backupDir = filepath.Dir(db)
	}
	// The copy is as large as the file's pages in use; leave reserve free
	// for everyone else on the disk, or do not start.
	var fsst syscall.Statfs_t
	if err := syscall.Statfs(backupDir, &fsst); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	free := int64(fsst.Bavail) * int64(fsst.Bsize)
	if free < after.Size()+reserve {
		return fmt.Errorf("backup: %s has %s free, the copy needs up to %s and %s must stay free", backupDir, gib(free), gib(after.Size()), gib(reserve))
	}
	fmt.Fprintf(os.Stderr, "backlog: %s free in %s before the backup\n", gib(free), backupDir)
	copyPath := filepath.Join(backupDir, "backlog-copy.db")
	os.Remove(copyPath)
	defer os.Remove(copyPath)
	if err := run("comb backup --db --progress (copy, sync, then check of the copy)", "backup", "--db", db, "--out", copyPath, "--progress"); err != nil {
		return fmt.Errorf("backup: %w", err)
	}

	return report(db, out, info, after, n, first, last, startLoad, load(), rows)
}

func report(db, out string, info, after os.FileInfo, n int64, first, last time.Time, startLoad, endLoad string, rows []row) error {
	var md strings.Builder
	fmt.Fprintf(&md, "### %s: %s at start (%s after retention), %d messages over %s\n\n", filepath.Base(db), gib(info.Size()), gib(after.Size()), n, last.Sub(first).Round(time.Hour))
	fmt.Fprintf(&md, "Load average at start %s, at end %s.\n\n", startLoad, endLoad)
	md.WriteString("| step | time | peak RSS (VmHWM) | notes |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", r.what, r.took, r.rss, r.note)
	}
	md.WriteString("\n")
	fmt.Print(md.String())
	if out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(md.String())
		return err
	}
	return nil
}

// sqlite3 runs query on db read-only with the sqlite3 command-line tool,
// beside the server (WAL lets it read while comb writes), and returns the
// integers of its one row.
func sqlite3(ctx context.Context, db, query string) ([]int64, error) {
	out, err := exec.CommandContext(ctx, "sqlite3", "-readonly", "-cmd", ".timeout 10000", db, query).Output()
	if err != nil {
		return nil, fmt.Errorf("sqlite3 %q: %w", query, err)
	}
	var vals []int64
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "|") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("sqlite3 %q: %q: %w", query, out, err)
		}
		vals = append(vals, n)
	}
	return vals, nil
}

// phases reads the time each phase took off a run's progress lines
// ("check: segments 1666 of 11476 (15%) segments, ..., 31s elapsed"): from
// the first line showing a phase to the first line showing the next one,
// or to the "done in" line for the last phase; good to a progress
// interval (a second).
func phases(lines []string) string {
	type span struct {
		name     string
		from, to time.Duration
	}
	var spans []span
	for _, l := range lines {
		_, rest, ok := strings.Cut(l, ": ")
		if d, isEnd := strings.CutPrefix(rest, "done in "); isEnd && len(spans) > 0 {
			if el, err := time.ParseDuration(d); err == nil {
				spans[len(spans)-1].to = max(spans[len(spans)-1].to, el)
			}
			continue
		}
		i := strings.LastIndex(rest, ", ")
		if !ok || i < 0 || !strings.HasSuffix(rest, " elapsed") {
			continue
		}
		el, err := time.ParseDuration(strings.TrimSuffix(rest[i+2:], " elapsed"))
		if err != nil {
			continue
		}
		var name []string
		for _, w := range strings.Fields(rest[:i]) {
			if w[0] >= '0' && w[0] <= '9' {
				break
			}
			name = append(name, strings.TrimSuffix(w, ","))
			if strings.HasSuffix(w, ",") {
				break
			}
		}
		n := strings.Join(name, " ")
		if len(spans) == 0 || spans[len(spans)-1].name != n {
			if len(spans) > 0 {
				spans[len(spans)-1].to = el
			}
			spans = append(spans, span{name: n, from: el})
		}
		spans[len(spans)-1].to = max(spans[len(spans)-1].to, el)
	}
	var out []string
	for _, s := range spans {
		out = append(out, fmt.Sprintf("%s %s", s.name, (s.to-s.from).Round(time.Second)))
	}
	return strings.Join(out, ", ")
}
