package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"
)

// progressFlag adds --progress to a long command. Unset, progress shows
// only when stderr is a terminal, so scripts and cron jobs keep clean
// output without asking.
func progressFlag(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "progress", false, "print how far it has come on stderr about once a second (default: when stderr is a terminal)")
}

// wantProgress is whether a command shows progress: as --progress says
// when given, else when stderr is a terminal.
func (m *App) wantProgress(fs *pflag.FlagSet, flag bool) bool {
	if fs.Changed("progress") {
		return flag
	}
	f, ok := m.Stderr.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func (m *App) progressInterval() time.Duration {
	if m.progressEvery > 0 {
		return m.progressEvery
	}
	return time.Second
}

// progress prints how far a check or backup has come: the newest state,
// at most once per tick, every phase at least once (a phase that began
// and ended between two ticks with its last state, at the next tick or
// at the end), and a last line when it ends. A phase that came and went
// unseen was missing from the output of a small file, where a whole
// phase takes less than a tick. Updates come from the work's goroutines;
// lines go out from the ticker's.
type progress struct {
	w    io.Writer
	what string // "check", "backup"
	now  func() time.Time

	mu      sync.Mutex
	start   time.Time
	cur     phaseState
	seen    bool
	pending []phaseState // phases that ended before a tick printed them
	stop    chan struct{}
	wg      sync.WaitGroup
}

// phaseState is where one phase has come.
type phaseState struct {
	pr      combtype.Progress
	start   time.Time // when the phase was first seen
	last    time.Time // when it was last updated
	done0   int64     // Done when it was first seen, for the rate
	printed bool
}

// startProgress returns a progress that prints to w every interval until
// end; nil (whose methods do nothing) when off.
func startProgress(on bool, w io.Writer, what string, interval time.Duration) *progress {
	if !on {
		return nil
	}
	p := newProgress(w, what, time.Now)
	t := time.NewTicker(interval)
	p.wg.Go(func() {
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.tick()
			}
		}
	})
	return p
}

func newProgress(w io.Writer, what string, now func() time.Time) *progress {
	return &progress{w: w, what: what, now: now, start: now(), stop: make(chan struct{})}
}

// update records where the work is; it prints nothing.
func (p *progress) update(pr combtype.Progress) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.seen || pr.Phase != p.cur.pr.Phase {
		if p.seen && !p.cur.printed {
			p.pending = append(p.pending, p.cur)
		}
		p.seen, p.cur = true, phaseState{start: now, done0: max(pr.Done, 0)}
	}
	p.cur.pr, p.cur.last = pr, now
}

// fn is update as a callback, or nil when p is off, so the work does no
// more than without progress.
func (p *progress) fn() func(combtype.Progress) {
	if p == nil {
		return nil
	}
	return p.update
}

// prefixed returns an update func naming its phases "<prefix> <phase>".
func (p *progress) prefixed(prefix string) func(combtype.Progress) {
	if p == nil {
		return nil
	}
	return func(pr combtype.Progress) {
		pr.Phase = prefix + " " + pr.Phase
		p.update(pr)
	}
}

// tick prints the phases that ended unprinted, then the newest state.
func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.seen {
		return
	}
	p.flush()
	p.print(&p.cur, p.now())
}

// flush prints the phases that ended before a tick printed them, each as
// it ended. Lock held.
func (p *progress) flush() {
	for i := range p.pending {
		p.print(&p.pending[i], p.pending[i].last)
	}
	p.pending = p.pending[:0]
}

// print writes ps's line as at now: a phase that ended is printed as at
// its last update. Lock held.
func (p *progress) print(ps *phaseState, now time.Time) {
	ps.printed = true
	line := p.what + ": " + ps.pr.Phase
	pr := ps.pr
	if pr.Done >= 0 && pr.Total > 0 {
		line += fmt.Sprintf(" %s of %s (%.0f%%)", amount(pr.Done, pr.Unit), amount(pr.Total, pr.Unit),
			100*float64(pr.Done)/float64(pr.Total))
		if pr.Unit != combtype.UnitBytes {
			line += " " + pr.Unit
		}
		if el := now.Sub(ps.start); el > 0 && pr.Done > ps.done0 {
			rate := float64(pr.Done-ps.done0) / el.Seconds()
			if pr.Unit == combtype.UnitBytes || rate >= 10 {
				line += ", " + amount(int64(rate), pr.Unit) + "/s"
			} else {
				line += fmt.Sprintf(", %.1f/s", rate) // a slow phase (the row checks) shows as more than 0
			}
			eta := time.Duration(float64(pr.Total-pr.Done) / rate * float64(time.Second))
			line += ", ETA " + eta.Round(time.Second).String()
		}
	}
	line += fmt.Sprintf(", %s elapsed", now.Sub(p.start).Round(time.Second))
	fmt.Fprintln(p.w, line)
}

// end stops the ticker and prints how long the whole took.
func (p *progress) end(ok bool) {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen {
		p.flush()
		if !p.cur.printed {
			p.print(&p.cur, p.now())
		}
	}
	word := "done"
	if !ok {
		word = "stopped"
	}
	fmt.Fprintf(p.w, "%s: %s in %s\n", p.what, word, p.now().Sub(p.start).Round(10*time.Millisecond))
}

// amount formats n of unit for a progress line: bytes with their
// multiple, other units as the bare count (the line names them once).
func amount(n int64, unit string) string {
	if unit != combtype.UnitBytes {
		return strconv.FormatInt(n, 10)
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
