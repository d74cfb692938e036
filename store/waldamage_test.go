package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// A WAL damaged in the middle lost, at the next open, every commit after
// the damage without a word: SQLite's recovery stops at the first frame
// that does not verify. The open now finds the commits after it that
// still verify, says how many recovery drops, and keeps the WAL as found
// beside the file. A write torn at the end (a crash's own) is recovery
// doing its work and is said nothing of.
func TestADamagedWALIsKeptBeforeRecoveryDropsItsCommits(t *testing.T) {
	header := func(at int) func(wal []byte, frames []walFrame) []byte {
		return func(wal []byte, frames []walFrame) []byte {
			wal[at] ^= 0x40
			return wal
		}
	}
	for _, c := range []struct {
		name    string
		damage  func(wal []byte, frames []walFrame) []byte
		dropped bool
		header  bool // the header damaged: recovery reads none of the WAL
	}{
		// Before, each of these lost every commit of the WAL unsaid.
		{"the header's magic", header(1), true, true},
		{"the header's version", header(6), true, true},
		{"the header's page size", header(10), true, true},
		{"the header's checkpoint sequence", header(13), true, true},
		{"the header's salt", header(17), true, true},
		{"the header's checksum", header(25), true, true},
		{"a frame in the middle", func(wal []byte, frames []walFrame) []byte {
			f := frames[len(frames)/2]
			wal[f.at+24+100] ^= 0x40
			return wal
		}, true, false},
		{"a write torn at the end", func(wal []byte, frames []walFrame) []byte {
			return wal[:frames[len(frames)-1].at+500]
		}, false, false},
		{"the last frame", func(wal []byte, frames []walFrame) []byte {
			wal[frames[len(frames)-1].at+24+100] ^= 0x40
			return wal
		}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.db")
			st := openLogged(t, path, nil)
			pushN(t, st, "a", 3)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			commitAndCrash(t, path, 6)
			wal, err := os.ReadFile(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			frames := walFrames(t, wal)
			wal = c.damage(wal, frames)
			if err := os.WriteFile(path+"-wal", wal, 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := store.Check(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if found := len(rep.Findings) == 1 && rep.Findings[0].Check == "wal"; found != c.dropped || len(rep.Findings) > 1 {
				t.Errorf("check of the crash image: %v; want a wal finding: %v", rep.Findings, c.dropped)
			} else if found && strings.Contains(rep.Findings[0].Detail, "header") != c.header {
				t.Errorf("check of the crash image: %v; want it to name the header: %v", rep.Findings, c.header)
			}
			// A backup of the crash image would copy what recovery makes of
			// it, and check clean.
			if err := store.BackupFile(context.Background(), path, filepath.Join(dir, "b.db")); (err != nil) != c.dropped {
				t.Errorf("backup of the crash image: %v; want it refused: %v", err, c.dropped)
			}
			var logs bytes.Buffer
			st = openLogged(t, path, slog.New(slog.NewTextHandler(&logs, nil)))
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			// The premise: recovery keeps the commits before the damage
			// (none before a damaged header: not even the table).
			if c.header {
				if n := combtest.SQLite3Exec(t, path, "SELECT count(*) FROM sqlite_master WHERE name = 'outside_notes'"); n != "0" {
					t.Errorf("recovery read a WAL whose header is damaged: %s tables", n)
				}
			} else if rows, want := combtest.SQLite3Exec(t, path, "SELECT count(*) FROM outside_notes"), "5"; (rows == want) == c.dropped {
				t.Errorf("%s of 6 rows recovered; want 5 (the last commit's) %s", rows, map[bool]string{true: "dropped and more", false: "dropped only"}[c.dropped])
			}
			copies, _ := filepath.Glob(path + "-wal.damaged-*")
			said := strings.Contains(logs.String(), "the WAL is damaged")
			if !c.dropped {
				if said || len(copies) != 0 {
					t.Errorf("said %v, kept %v, for a WAL whose damage drops no commit:\n%s", said, copies, logs.String())
				}
				return
			}
			if !said || !strings.Contains(logs.String(), "commitsDropped=") || strings.Contains(logs.String(), "commitsDropped=0 ") ||
				strings.Contains(logs.String(), "headerDamaged=true") != c.header {
				t.Errorf("open said nothing of the commits recovery dropped:\n%s", logs.String())
			}
			if len(copies) != 1 {
				t.Fatalf("copies of the WAL: %v, want one", copies)
			}
			if kept, err := os.ReadFile(copies[0]); err != nil || !bytes.Equal(kept, wal) {
				t.Errorf("the copy is not the WAL as found (%d bytes, %v; want %d)", len(kept), err, len(wal))
			}
			combtest.CheckInvariants(t, path)
		})
	}
}

// commitAndCrash makes n commits to path with sqlite3, each a page or
// two, and kills it before it checkpoints: a crash image whose WAL holds
// them.
func commitAndCrash(t *testing.T, path string, n int) {
	t.Helper()
	cmd := exec.Command(combtest.SQLite3(t), path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	script := ".timeout 10000\nPRAGMA wal_autocheckpoint = 0;\nCREATE TABLE IF NOT EXISTS outside_notes (note BLOB);\n" +
		strings.Repeat("INSERT INTO outside_notes VALUES (randomblob(3000));\n", n) + "SELECT 'written';\n"
	if _, err := stdin.Write([]byte(script)); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("sqlite3: %q, %v", line, err)
		}
		if strings.TrimSpace(line) == "written" {
			return // and killed, before it could checkpoint
		}
	}
}

type walFrame struct{ at int }

// walFrames are the frames of wal, each frame's header byte offset.
func walFrames(t *testing.T, wal []byte) []walFrame {
	t.Helper()
	if len(wal) < 32 {
		t.Fatalf("WAL of %d bytes", len(wal))
	}
	size := 24 + int(binary.BigEndian.Uint32(wal[8:]))
	var frames []walFrame
	for at := 32; at+size <= len(wal); at += size {
		frames = append(frames, walFrame{at: at})
	}
	if len(frames) < 4 {
		t.Fatalf("%d frames in the WAL, want several commits", len(frames))
	}
	return frames
}
