package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

var crashCycles = flag.Int("crash.cycles", 0,
	"kill -9 cycles of TestKillNineUnderMixedLoadLosesNothing (default 3, also COMB_CRASH_CYCLES); scripts/crashloop runs many")

// TestKillNineUnderMixedLoadLosesNothing runs cycles of: start comb serve
// on one database file, push, pop, ack, autoAck-pop, seek and sweep
// retention at once, SIGKILL the server, restart it, and check:
//   - group verify, drained after every restart, has by then received every
//     push ever answered 201, each exactly once, in per-producer order
//     within each partition;
//   - no group gets again a message whose ack was answered 200 (g1, g2)
//     or that an autoAck pop delivered (g3), seeks being forward only;
//   - the file's invariants hold after each kill, and comb check is clean
//     after every restart.
//
// Every second cycle is an "outside" cycle: beside the load, outside
// SQLite connections (the sqlite3 shell, and comb check's own in another
// process) open, read and close the file, or run ANALYZE, a sqlite3
// session holds a write transaction for up to 300 ms and rolls it back,
// and online backups run,
// at random points until the kill. The server's WAL must stay in place
// through them; losing its locks to one of them would let the shell delete
// it, and every push answered after that would be lost at the kill.
func TestKillNineUnderMixedLoadLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server binary; skipped with -short")
	}
	cycles := *crashCycles
	if v := os.Getenv("COMB_CRASH_CYCLES"); v != "" && cycles == 0 {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("COMB_CRASH_CYCLES=%q: %v", v, err)
		}
		cycles = n
	}
	if cycles <= 0 {
		cycles = 3
	}
	const (
		queue      = "crash"
		churn      = "churn" // consumed by autoAck only, so completed retention deletes under load
		producers  = 4
		partitions = 3
		loadFor    = 700 * time.Millisecond
	)
	t.Setenv("RETENTION_INTERVAL", "100") // ms: sweeps race the load
	bin := crashBuildBinary(t)
	db := filepath.Join(t.TempDir(), "comb.db")
	client := crashNewClient()

	confirmed := map[string]crashItem{} // every push answered 201, over all cycles
	attempted := map[string]crashItem{}
	consumed := map[string]map[string]bool{"g1": {}, "g2": {}, "g3": {}} // acked (g1, g2) or autoAck-delivered (g3)
	verified := map[string]bool{}
	var verifyLog []crashMsg

	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sqlite3 is not installed (Debian package sqlite3): %v", err)
		}
		t.Logf("sqlite3 is not installed: outside cycles run comb check and backups only")
	}
	for cycle := 1; cycle <= cycles; cycle++ {
		outside := cycle%2 == 0
		srv := crashStartServer(t, bin, db, fmt.Sprintf("cycle%d", cycle))
		if cycle == 1 {
			for q, opts := range map[string]map[string]any{
				queue: {"leaseTime": 2, "retentionEnabled": true, "retentionSeconds": 3600, "completedRetentionSeconds": 1},
				churn: {"leaseTime": 2, "retentionEnabled": true, "completedRetentionSeconds": 1},
			} {
				status, body, err := crashDo(context.Background(), client, http.MethodPost, srv.base+"/api/v1/configure",
					map[string]any{"queue": q, "options": opts})
				if err != nil || status != http.StatusOK {
					t.Fatalf("configure %s: %d %v %s", q, status, err, crashSnippet(body))
				}
			}
			// verify subscribes before any push, so completed retention
			// keeps everything of queue until verify has it.
			if _, _, err := crashPop(context.Background(), client, crashPopURL(srv.base, queue, "verify", 1, true)); err != nil {
				t.Fatal(err)
			}
		}

		ctx, stopLoad := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		logs := make([]*crashProducerLog, producers)
		for i := range producers {
			logs[i] = &crashProducerLog{attempted: map[string]crashItem{}, confirmed: map[string]bool{}}
			// A producer number per cycle: seq numbers restart with each.
			wg.Go(func() { crashProduce(ctx, client, srv.base, queue, cycle*100+i, partitions, logs[i]) })
		}
		churnLog := &crashProducerLog{attempted: map[string]crashItem{}, confirmed: map[string]bool{}}
		wg.Go(func() { crashProduce(ctx, client, srv.base, churn, cycle*100+99, 1, churnLog) })
		mixed := make([]*crashMixedLog, 3)
		for i, g := range []string{"g1", "g2", "g3"} {
			mixed[i] = &crashMixedLog{group: g, seen: consumed[g], consumed: map[string]bool{}}
			q := queue
			if g == "g3" {
				q = churn
			}
			wg.Go(func() { crashMixedConsumer(ctx, client, srv.base, q, mixed[i]) })
		}
		neighbours := &crashOutsideLog{}
		var killed atomic.Bool
		if outside {
			wg.Go(func() { crashOutside(ctx, client, srv.base, bin, sqlite3, db, &killed, neighbours) })
		}

		wait := loadFor + time.Duration(rand.IntN(300))*time.Millisecond
		if outside {
			wait += time.Second // room for the outside work on a slow machine
		}
		time.Sleep(wait)
		killed.Store(true)
		if err := srv.cmd.Process.Kill(); err != nil {
			t.Fatalf("kill server: %v", err)
		}
		<-srv.exited
		stopLoad()
		wg.Wait()
		client.CloseIdleConnections()

		for _, pl := range logs {
			for id, it := range pl.attempted {
				attempted[id] = it
			}
			for id := range pl.confirmed {
				confirmed[id] = pl.attempted[id]
			}
			for _, e := range pl.errs {
				t.Errorf("cycle %d: %s", cycle, e)
			}
		}
		for _, e := range neighbours.errs {
			t.Errorf("cycle %d: %s", cycle, e)
		}
		for _, ml := range mixed {
			for _, e := range ml.errs {
				t.Errorf("cycle %d: %s", cycle, e)
			}
			for id := range ml.consumed {
				consumed[ml.group][id] = true
			}
		}
		combtest.CheckInvariants(t, db)

		srv = crashStartServer(t, bin, db, fmt.Sprintf("cycle%d-restarted", cycle))
		// comb check in its own process, on the file the restarted
		// server serves.
		if out, err := exec.Command(bin, "check", "--db", db).CombinedOutput(); err != nil {
			t.Errorf("cycle %d: comb check after the restart: %v\n%s", cycle, err, out)
		}
		got, errs := crashDrain(client, srv.base, queue, "verify", partitions, true)
		for _, e := range errs {
			t.Errorf("cycle %d: %s", cycle, e)
		}
		for _, m := range got {
			if verified[m.TransactionID] {
				t.Errorf("cycle %d: %s delivered to verify again after its ack was answered", cycle, m.TransactionID)
			}
			verified[m.TransactionID] = true
		}
		verifyLog = append(verifyLog, got...)
		missing := 0
		for id, it := range confirmed {
			if !verified[id] {
				missing++
				if missing <= 5 {
					t.Errorf("cycle %d: push %s (producer %d seq %d %s) was answered 201 and is lost", cycle, id,
						it.Producer, it.Seq, it.Partition)
				}
			}
		}
		if err := srv.cmd.Process.Kill(); err != nil {
			t.Fatalf("kill server: %v", err)
		}
		<-srv.exited
		t.Logf("cycle %d: %d pushes answered so far, all delivered to verify: %v; acked g1 %d g2 %d, autoAck g3 %d; outside: %d sqlite3 sessions, %d ANALYZE, %d write transactions held, %d checks, %d online backups",
			cycle, len(confirmed), missing == 0, len(consumed["g1"]), len(consumed["g2"]), len(consumed["g3"]),
			neighbours.sessions, neighbours.analyzes, neighbours.holds, neighbours.checks, neighbours.backups)
		if t.Failed() {
			return
		}
	}
	crashCheckMessages(t, verifyLog, attempted)
}

// crashMixedLog is what one consumer of the mixed load saw.
type crashMixedLog struct {
	group    string
	seen     map[string]bool // consumed in earlier cycles: must not come back
	consumed map[string]bool // acked 200, or delivered by an autoAck pop
	errs     []string
}

// crashMixedConsumer pops for its group until ctx ends: g1 pops and acks,
// g2 also seeks to the end now and then, g3 pops with autoAck. A message
// consumed before (in this cycle or an earlier one) must never come back.
func crashMixedConsumer(ctx context.Context, client *http.Client, base, queue string, rec *crashMixedLog) {
	autoAck := rec.group == "g3"
	popURL := crashPopURL(base, queue, rec.group, 20, false)
	if autoAck {
		popURL += "&autoAck=true"
	}
	for ctx.Err() == nil {
		if rec.group == "g2" && rand.IntN(10) == 0 {
			status, body, err := crashDo(ctx, client, http.MethodPost,
				base+"/api/v1/consumer-groups/g2/queues/"+queue+"/seek", map[string]any{"toEnd": true})
			if err != nil {
				return
			}
			if status != http.StatusOK {
				rec.errs = append(rec.errs, fmt.Sprintf("seek: %d %s", status, crashSnippet(body)))
			}
		}
		msgs, status, err := crashPop(ctx, client, popURL)
		if err != nil {
			if status != 0 {
				rec.errs = append(rec.errs, err.Error())
			}
			return
		}
		for _, m := range msgs {
			if rec.seen[m.TransactionID] || rec.consumed[m.TransactionID] {
				rec.errs = append(rec.errs, fmt.Sprintf("group %s got %s again after it was consumed", rec.group,
					m.TransactionID))
			}
		}
		if autoAck {
			for _, m := range msgs {
				rec.consumed[m.TransactionID] = true
			}
			continue
		}
		if len(msgs) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		ok, status, err := crashAck(ctx, client, base, rec.group, msgs)
		if err != nil {
			if status != 0 && rec.group != "g2" { // a seek may release g2's lease under its ack
				rec.errs = append(rec.errs, err.Error())
			}
			if status == 0 {
				return
			}
		}
		for _, id := range ok {
			rec.consumed[id] = true
		}
	}
}

// crashOutsideLog is what the outside connections of one cycle did.
type crashOutsideLog struct {
	mu                                         sync.Mutex
	sessions, analyzes, holds, checks, backups int
	errs                                       []string
}

func (l *crashOutsideLog) add(n *int, err string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != "" {
		l.errs = append(l.errs, err)
		return
	}
	*n++
}

// crashHoldWrite runs a sqlite3 session that begins a write transaction,
// holds the file's write lock for hold and rolls it back.
func crashHoldWrite(ctx context.Context, sqlite3, db string, hold time.Duration) error {
	cmd := exec.CommandContext(ctx, sqlite3, db)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sqlite3: %w", err)
	}
	// .timeout: the session waits for a commit of the server's to end, as
	// the server waits for it.
	io.WriteString(stdin, ".timeout 10000\nBEGIN IMMEDIATE;\nselect 'holding';\n")
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	io.WriteString(stdin, "ROLLBACK;\n")
	stdin.Close()
	if err := cmd.Wait(); err != nil || strings.Contains(out.String(), "Error") {
		return fmt.Errorf("sqlite3 write transaction: %v: %s", err, out.String())
	}
	return nil
}

// crashOutside does, at random points until ctx ends, what users do beside
// a running server, each in a loop of its own: a sqlite3 session that
// opens the file, reads and closes it; a sqlite3 session that holds a
// write transaction a moment, shorter than the server's busy timeout, and
// rolls it back (the server's writes wait for it, none is refused); comb
// check, a SQLite connection in another process; an online backup. After each, the server's WAL must
// still be in the directory while the server runs: once killed (killed
// is set just before the kill), a session that closes last may checkpoint
// the WAL and remove it, as SQLite does. What the kill interrupts is not
// an error.
func crashOutside(ctx context.Context, client *http.Client, base, bin, sqlite3, db string, killed *atomic.Bool, rec *crashOutsideLog) {
	pause := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Duration(rand.IntN(100)) * time.Millisecond):
			return true
		}
	}
	walThere := func(after string) string {
		if _, err := os.Stat(db + "-wal"); err != nil && ctx.Err() == nil && !killed.Load() {
			return fmt.Sprintf("the running server's WAL is gone after %s: %v", after, err)
		}
		return ""
	}
	var wg sync.WaitGroup
	if sqlite3 != "" {
		wg.Go(func() {
			for pause() {
				// One session in four runs ANALYZE, whose statistics the
				// server drops while it writes (store/planstats.go).
				sql, n := "select count(*) from queues; select coalesce(sum(frame_count), 0) from segments", &rec.sessions
				if rand.IntN(4) == 0 {
					sql, n = "ANALYZE", &rec.analyzes
				}
				out, err := exec.CommandContext(ctx, sqlite3, "-cmd", ".timeout 10000", db, sql).CombinedOutput()
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					rec.add(nil, fmt.Sprintf("sqlite3 %s: %v: %s", sql, err, out))
					continue
				}
				rec.add(n, walThere("a sqlite3 session"))
			}
		})
		wg.Go(func() {
			for pause() {
				if err := crashHoldWrite(ctx, sqlite3, db, time.Duration(rand.IntN(300))*time.Millisecond); err != nil {
					if ctx.Err() == nil {
						rec.add(nil, err.Error())
					}
					continue
				}
				rec.add(&rec.holds, walThere("a sqlite3 write transaction"))
			}
		})
	}
	wg.Go(func() {
		for pause() {
			out, err := exec.CommandContext(ctx, bin, "check", "--db", db).CombinedOutput()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				rec.add(nil, fmt.Sprintf("comb check on the live file: %v: %s", err, out))
				continue
			}
			rec.add(&rec.checks, walThere("comb check"))
		}
	})
	wg.Go(func() {
		for pause() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/system/backup", nil)
			if err != nil {
				rec.add(nil, err.Error())
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				return // the kill
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				return
			}
			if resp.StatusCode != http.StatusOK || n == 0 {
				rec.add(nil, fmt.Sprintf("online backup: %d, %d bytes", resp.StatusCode, n))
				continue
			}
			rec.add(&rec.backups, walThere("an online backup"))
		}
	})
	wg.Wait()
}
