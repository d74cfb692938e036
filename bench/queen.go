package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startQueen starts a real Queen on its own PostgreSQL 15 with the kit's
// run.sh (kit: the directory holding it), in dir, and returns it as an
// HTTP target driven exactly as comb is: Queen serves the same routes.
// Its CPU is Queen's process plus every PostgreSQL process of the cluster
// (the postmaster, its live children, and the children it has reaped).
func startQueen(ctx context.Context, kit, dir, client string) (*combServer, error) {
	script := filepath.Join(kit, "run.sh")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("queen kit: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "bash", script, "start", dir)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errOut, &errOut
	if err := cmd.Run(); err != nil {
		stopQueen(kit, dir)
		return nil, fmt.Errorf("start queen: %w: %s", err, errOut.String())
	}
	env, err := readEnv(filepath.Join(dir, "env"))
	if err != nil {
		stopQueen(kit, dir)
		return nil, err
	}
	u, err := url.Parse(env["QUEEN_URL"])
	if err != nil || u.Host == "" {
		stopQueen(kit, dir)
		return nil, fmt.Errorf("queen env: QUEEN_URL %q", env["QUEEN_URL"])
	}
	queenPID, _ := strconv.Atoi(env["QUEEN_PID"])
	pgPID, _ := strconv.Atoi(env["PG_PID"])
	if queenPID <= 0 || pgPID <= 0 {
		stopQueen(kit, dir)
		return nil, fmt.Errorf("queen env: QUEEN_PID %q, PG_PID %q", env["QUEEN_PID"], env["PG_PID"])
	}
	c := &combServer{dir: dir, addr: u.Host, base: env["QUEEN_URL"], lean: client == "lean", name: "queen",
		pushStatus: http.StatusOK}
	c.client = &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true,
	}, Timeout: 60 * time.Second}
	c.cpuSeconds = func() float64 { return procCPUSeconds(queenPID) + treeCPUSeconds(pgPID) }
	time.Sleep(500 * time.Millisecond)
	c.idleMB = procMB(queenPID, "VmRSS") + treePSSMB(pgPID)
	c.stopFn = func() memStats {
		m := memStats{idleMB: c.idleMB, peakMB: procMB(queenPID, "VmHWM") + treePSSMB(pgPID)}
		stopQueen(kit, dir)
		return m
	}
	return c, nil
}

func stopQueen(kit, dir string) {
	cmd := exec.Command("bash", filepath.Join(kit, "run.sh"), "stop", dir)
	cmd.Stdout, cmd.Stderr = nil, nil
	_ = cmd.Run()
}

// readEnv reads the NAME=VALUE lines run.sh writes.
func readEnv(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("queen env: %w", err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out, nil
}

// statFields returns the fields of /proc/pid/stat after the command name.
func statFields(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(data[i+1:]))
}

// children returns the pids whose parent is pid.
func children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(p); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// treeCPUSeconds is the CPU time of pid, of its live children, and of the
// children it has waited for (cutime, cstime): a PostgreSQL cluster's
// postmaster, its backends and its background workers.
func treeCPUSeconds(pid int) float64 {
	f := statFields(pid)
	if len(f) < 15 {
		return 0
	}
	var ticks float64
	for _, i := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	total := ticks / 100
	for _, ch := range children(pid) {
		total += procCPUSeconds(ch)
	}
	return total
}

// treePSSMB is the proportional set size of pid and its children in MB:
// PostgreSQL's processes share its buffers, which RSS would count in each.
func treePSSMB(pid int) float64 {
	total := pssMB(pid)
	for _, ch := range children(pid) {
		total += pssMB(ch)
	}
	return total
}

func pssMB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
