package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// makeBigDB writes a database with n segments in four partitions, so a
// check and a backup take long enough for a few progress ticks.
func makeBigDB(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "comb.db")
	ctx := context.Background()
	b, err := broker.Open(ctx, broker.Options{Path: path, RetentionInterval: -1, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]combtype.PushItem, 20)
	for s := range n {
		for i := range items {
			items[i] = combtype.PushItem{Queue: "orders", Partition: fmt.Sprintf("p%d", s%4),
				Payload: []byte(fmt.Sprintf(`{"n":%d,"text":%q}`, s*20+i, strings.Repeat("x", 200)))}
		}
		if _, err := b.Push(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func runWith(t *testing.T, every time.Duration, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := &App{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }, progressEvery: every}
	err = m.Run(context.Background(), args)
	return out.String(), errOut.String(), err
}

// progressLine is the shape of every line --progress prints.
var progressLine = regexp.MustCompile(`^(check|backup): (` +
	`(integrity|segments|rows|copy|sync|check integrity|check segments|check rows)` +
	`( [0-9.]+ (B|[KMG]iB) of [0-9.]+ (B|[KMG]iB) \([0-9]+%\)(, [0-9.]+ (B|[KMG]iB)/s, ETA [0-9hms.]+)?` +
	`| [0-9]+ of [0-9]+ \([0-9]+%\) (segments|checks)(, [0-9.]+/s, ETA [0-9hms.]+)?)?, [0-9hms.]+ elapsed` +
	`|done in [0-9hms.]+)$`)

func TestCheckAndBackupPrintProgressOnlyWhenAskedAndFindTheSame(t *testing.T) {
	path := makeBigDB(t, 300)
	// Without --progress (stderr here is no terminal) stderr stays empty;
	// with it, lines of the documented shape appear; stdout is the same.
	quiet, quietErr, err := runWith(t, time.Millisecond, "check", "--db", path, "--output", "json")
	if err != nil || quietErr != "" {
		t.Fatalf("check: %v, stderr %q", err, quietErr)
	}
	loud, loudErr, err := runWith(t, time.Millisecond, "check", "--db", path, "--output", "json", "--progress")
	if err != nil {
		t.Fatal(err)
	}
	if loud != quiet {
		t.Errorf("stdout changed by --progress:\n%s\nvs\n%s", loud, quiet)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(loud), &rep); err != nil || rep["segments"] != float64(300) || rep["messages"] != float64(6000) {
		t.Errorf("check --output json: %v %v", err, rep)
	}
	checkLines(t, loudErr, "check", "segments ")
	if _, e, err := runWith(t, time.Millisecond, "check", "--db", path, "--progress=false"); err != nil || e != "" {
		t.Errorf("--progress=false: %v, stderr %q", err, e)
	}

	dir := t.TempDir()
	quiet, quietErr, err = runWith(t, time.Millisecond, "backup", "--db", path, "--out", filepath.Join(dir, "a.db"), "--output", "json")
	if err != nil || quietErr != "" {
		t.Fatalf("backup: %v, stderr %q", err, quietErr)
	}
	loud, loudErr, err = runWith(t, time.Millisecond, "backup", "--db", path, "--out", filepath.Join(dir, "b.db"), "--output", "json", "--progress")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Replace(loud, "b.db", "a.db", 1) != quiet {
		t.Errorf("stdout changed by --progress:\n%s\nvs\n%s", loud, quiet)
	}
	checkLines(t, loudErr, "backup", "check segments ")
	if err := json.Unmarshal([]byte(loud), &rep); err != nil || rep["messages"] != float64(6000) || rep["checked"] != true {
		t.Errorf("backup --output json: %v %v", err, rep)
	}
}

// checkLines wants every line of stderr in the progress shape, the last
// one "<what>: done in", and some line naming phase.
func checkLines(t *testing.T, stderr, what, phase string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	sawPhase := false
	for _, l := range lines {
		if !progressLine.MatchString(l) {
			t.Errorf("progress line %q is not of the documented shape", l)
		}
		sawPhase = sawPhase || strings.HasPrefix(l, what+": "+phase)
	}
	if !strings.HasPrefix(lines[len(lines)-1], what+": done in ") {
		t.Errorf("last progress line %q, want %q", lines[len(lines)-1], what+": done in ...")
	}
	if !sawPhase {
		t.Errorf("no %q line in:\n%s", phase, stderr)
	}
}

func TestProgressPrintsTheNewestStateWithRateAndETA(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	p := newProgress(&out, "backup", func() time.Time { return now })
	p.tick()
	if out.Len() != 0 {
		t.Fatalf("printed before any update: %q", out.String())
	}
	p.update(combtype.Progress{Phase: "copy", Done: 0, Total: 100 << 20, Unit: combtype.UnitBytes})
	now = now.Add(2 * time.Second)
	p.update(combtype.Progress{Phase: "copy", Done: 30 << 20, Total: 100 << 20, Unit: combtype.UnitBytes})
	p.update(combtype.Progress{Phase: "copy", Done: 50 << 20, Total: 100 << 20, Unit: combtype.UnitBytes})
	p.tick()
	p.update(combtype.Progress{Phase: "check segments", Done: 10, Total: 40, Unit: combtype.UnitSegments})
	now = now.Add(time.Second)
	p.update(combtype.Progress{Phase: "check segments", Done: 20, Total: 40, Unit: combtype.UnitSegments})
	p.tick()
	p.update(combtype.Progress{Phase: "check rows", Done: 0, Total: 12, Unit: combtype.UnitChecks})
	now = now.Add(2 * time.Second)
	p.update(combtype.Progress{Phase: "check rows", Done: 1, Total: 12, Unit: combtype.UnitChecks})
	p.tick()
	p.update(combtype.Progress{Phase: "sync", Done: -1, Total: 100 << 20, Unit: combtype.UnitBytes})
	p.tick()
	now = now.Add(500 * time.Millisecond)
	p.end(true)
	want := "backup: copy 50.0 MiB of 100.0 MiB (50%), 25.0 MiB/s, ETA 2s, 2s elapsed\n" +
		"backup: check segments 20 of 40 (50%) segments, 10/s, ETA 2s, 3s elapsed\n" +
		"backup: check rows 1 of 12 (8%) checks, 0.5/s, ETA 22s, 5s elapsed\n" +
		"backup: sync, 5s elapsed\n" +
		"backup: done in 5.5s\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// A phase that begins and ends between two ticks is printed, as it
// ended, at the next tick, and one no tick printed before the end just
// before the last line: a small file's check, whose phases each take less
// than a tick, names every phase it went through.
func TestProgressPrintsEveryPhaseAtLeastOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	p := newProgress(&out, "check", func() time.Time { return now })
	p.update(combtype.Progress{Phase: "integrity", Done: 0, Total: 4 << 20, Unit: combtype.UnitBytes})
	now = now.Add(time.Second)
	p.update(combtype.Progress{Phase: "integrity", Done: 4 << 20, Total: 4 << 20, Unit: combtype.UnitBytes})
	p.update(combtype.Progress{Phase: "segments", Done: 0, Total: 300, Unit: combtype.UnitSegments})
	now = now.Add(time.Second)
	p.update(combtype.Progress{Phase: "segments", Done: 100, Total: 300, Unit: combtype.UnitSegments})
	p.tick() // integrity ended unprinted
	p.update(combtype.Progress{Phase: "segments", Done: 300, Total: 300, Unit: combtype.UnitSegments})
	p.update(combtype.Progress{Phase: "rows", Done: 0, Total: 12, Unit: combtype.UnitChecks})
	now = now.Add(time.Second)
	p.update(combtype.Progress{Phase: "rows", Done: 12, Total: 12, Unit: combtype.UnitChecks})
	p.end(true) // segments was printed, rows not
	want := "check: integrity 4.0 MiB of 4.0 MiB (100%), 4.0 MiB/s, ETA 0s, 1s elapsed\n" +
		"check: segments 100 of 300 (33%) segments, 100/s, ETA 2s, 2s elapsed\n" +
		"check: rows 12 of 12 (100%) checks, 12/s, ETA 0s, 3s elapsed\n" +
		"check: done in 3s\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
