package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// firstPopModes are the subscriptions -firstpop measures a new group's
// first pop with: from the oldest (the default), from the end, from a
// time a day back, which lands before every message of the databases, and
// from a time a minute ahead, past every message (nothing due).
var firstPopModes = []struct{ name, query string }{
	{"all", ""},
	{"new", "&subscriptionMode=new"},
	{"timestamp", "&subscriptionFrom=" + url.QueryEscape(time.Now().Add(-24*time.Hour).UTC().Format(time.RFC3339))},
	{"after", "&subscriptionFrom=" + url.QueryEscape(time.Now().Add(time.Minute).UTC().Format(time.RFC3339))},
}

// measureFirstPops times the first pop of groups new consumer groups in
// each subscription mode (a new name every time, so every pop is a first
// one), and a pop of a group that already met the queue, on the
// database of n partitions. It returns the table's row for n.
func measureFirstPops(ctx context.Context, path string, n, groups int) ([]string, error) {
	s, err := serve(ctx, path)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if firstPopSettle {
		// Opening a store with a tenant past the live summary limit sums
		// it in the background (store/totals.go): seconds to minutes of
		// one core at a million partitions, growing with the groups; then
		// the refresher rests four times as long as that took. First
		// pops timed beside a sum share the machine with it: they are
		// timed once the status view says the sum is made, in the
		// refresher's rest, so they measure the pop.
		start := time.Now()
		if err := s.awaitSums(ctx, 1); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "scale: %d partitions: the sums made at open took %s ms more\n", n, ms(time.Since(start)))
	}
	stamp := time.Now().UnixNano()
	// A group that meets the queue first, unmeasured, so the database's
	// pages are read once before the first pops are timed.
	group := fmt.Sprintf("fp-next-%d", stamp)
	if _, _, err := s.popAck(queue, group); err != nil {
		return nil, err
	}
	row := []string{}
	for _, mode := range firstPopModes {
		if skipMode(mode.name, n) {
			row = append(row, "not measured")
			continue
		}
		var first timing
		for i := range groups {
			group := fmt.Sprintf("fp-%s-%d-%d", mode.name, stamp, i)
			p := "/api/v1/pop/queue/" + queue + "?batch=1&wait=false&consumerGroup=" + group + mode.query
			code, body, d, err := s.do("GET", p, nil)
			if err != nil {
				return nil, err
			}
			if code != http.StatusOK && code != http.StatusNoContent {
				return nil, fmt.Errorf("pop %s: %d %s", p, code, truncate(body))
			}
			first = append(first, d)
		}
		fmt.Fprintf(os.Stderr, "scale: %d partitions: first pop, %s: %s ms\n", n, mode.name, first.all())
		row = append(row, first.all())
	}
	// The group that met the queue: its pops after the first.
	var next timing
	for range max(groups, 10) {
		d, _, err := s.popAck(queue, group)
		if err != nil {
			return nil, err
		}
		next = append(next, d)
	}
	fmt.Fprintf(os.Stderr, "scale: %d partitions: next pops: %s ms\n", n, next)
	return append(row, next.String()), nil
}

// firstPopSkip is -firstpop-skip: mode@size pairs not measured (a first
// pop that seeds a cursor per partition from a time takes minutes at a
// million partitions).
var firstPopSkip map[string]bool

// firstPopSettle is -firstpop-settle: wait for the sums made at open
// before the first pops are timed.
var firstPopSettle bool

func skipMode(mode string, n int) bool { return firstPopSkip[fmt.Sprintf("%s@%d", mode, n)] }

var firstPopCols = []string{
	"first pop, new group, all (ms, each)",
	"first pop, new group, new",
	"first pop, new group, from a time before the data",
	"first pop, new group, from a time past the data",
	"pop b1 of a group that met the queue (median / p90)",
}

// all lists every time, in the order taken.
func (t timing) all() string {
	out := make([]string, len(t))
	for i, d := range t {
		out[i] = ms(d)
	}
	return strings.Join(out, ", ")
}

// awaitSums polls the status view until it has been answered from rounds
// sums of the background refresher: its statsAge goes from -1 (not summed
// yet) to an age, and each later round makes it drop. A tenant the status
// view sums on every read (statsAge 0 from the start) has none to wait for.
func (s *server) awaitSums(ctx context.Context, rounds int) error {
	last := -2.0
	for seen := 0; seen < rounds; {
		code, body, _, err := s.do("GET", "/api/v1/status", nil)
		if err != nil {
			return err
		}
		var st struct {
			StatsAge *float64 `json:"statsAge"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &st) != nil || st.StatsAge == nil {
			return fmt.Errorf("status: %d %s", code, truncate(body))
		}
		age := *st.StatsAge
		switch {
		case last == -2 && age >= 0:
			return nil // summed on every read
		case age >= 0 && (last < 0 || age < last):
			seen++
		}
		last = age
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
