package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// serverSample is what comb serve reports about itself at one moment: its
// CPU time and its commit counters. Two samples around a run give the
// server's CPU per message, which a shared machine's noise moves far less
// than a rate, and how many writes each commit fused.
type serverSample struct {
	cpuSeconds    float64
	commits       float64
	commitOps     float64
	commitSeconds float64
}

func (c *combServer) sample(ctx context.Context) serverSample {
	var s serverSample
	s.cpuSeconds = c.cpuSeconds()
	st, data, err := c.do(ctx, http.MethodGet, "/metrics/prometheus", nil)
	if err != nil || st != http.StatusOK {
		return s
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "comb_commit_batch_size_count":
			s.commits = v
		case "comb_commit_batch_size_sum":
			s.commitOps = v
		case "comb_commit_duration_seconds_sum":
			s.commitSeconds = v
		}
	}
	return s
}

// describe prints, for the messages msgs moved between a and b, the
// server's CPU per message and the commits' size and duration.
func describe(a, b serverSample, msgs float64) string {
	commits := b.commits - a.commits
	if commits <= 0 || msgs <= 0 {
		return ""
	}
	return fmt.Sprintf("server %.0f µs CPU/msg; %.0f commits, %.1f ops/commit, %.2f ms/commit",
		(b.cpuSeconds-a.cpuSeconds)/msgs*1e6, commits, (b.commitOps-a.commitOps)/commits,
		(b.commitSeconds-a.commitSeconds)/commits*1e3)
}

// clientCPU is this process's own CPU time at one moment; ok is false where
// the system does not report it.
type clientCPU struct {
	seconds float64
	ok      bool
}

func readClientCPU() clientCPU {
	s, ok := selfCPUSeconds()
	return clientCPU{s, ok}
}

// report prints the server's CPU per message and commits, and below it what
// driving those messages cost this process, so a row shows whether it
// measured the server or the client.
func (c *combServer) report(a, b serverSample, ca, cb clientCPU, msgs float64) {
	if msgs > 0 {
		c.cpuPerMsg = (b.cpuSeconds - a.cpuSeconds) / msgs * 1e6
	}
	if c.name != "comb" {
		fmt.Fprintf(os.Stderr, "  %s server %.0f µs CPU/msg (all its processes)\n", c.name, c.cpuPerMsg)
	} else {
		fmt.Fprintln(os.Stderr, "  comb", describe(a, b, msgs))
	}
	if ca.ok && cb.ok && msgs > 0 {
		kind := "std"
		if c.lean {
			kind = "lean"
		}
		fmt.Fprintf(os.Stderr, "  %s client %.0f µs CPU/msg (%s)\n", c.name, (cb.seconds-ca.seconds)/msgs*1e6, kind)
	}
}

// procCPUSeconds is the user+system CPU time of process pid.
func procCPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks; USER_HZ is 100 on Linux
}
