package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolveBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tc := range []struct {
		name                     string
		bi                       *debug.BuildInfo
		ldVersion, ldCommit, ldD string
		want                     buildInfo
	}{
		{"no build info", nil, "", "", "", buildInfo{Version: "devel"}},
		{"go build without vcs", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "(devel)"}}, "", "", "",
			buildInfo{Version: "devel", Go: "go1.x"}},
		{"go build in a checkout", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "", "", "",
			buildInfo{Version: "devel", Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-11-30T10:00:00Z", Modified: true, Go: "go1.x"}},
		{"go install module@version", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "v1.2.3"}}, "", "", "",
			buildInfo{Version: "v1.2.3", Go: "go1.x"}},
		{"release build", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"v0.2.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-12-01T00:00:00Z",
			buildInfo{Version: "v0.2.0", Commit: "fedcba9876543210fedcba9876543210fedcba98", Date: "2026-12-01T00:00:00Z", Go: "go1.x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveBuildInfo(tc.bi, tc.ldVersion, tc.ldCommit, tc.ldD)
			if tc.bi == nil {
				tc.want.Go = got.Go // the running toolchain's
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestVersionOfBuilds builds the binary once, with a version stamped the
// way scripts/release stamps it but no commit, and reads it back through
// both spellings. In a git clone the commit then comes from the
// toolchain, as for a plain go build: the revision, and whether the tree
// was modified.
func TestVersionOfBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "comb")
	cmd := exec.Command("go", "build", "-buildvcs=auto", "-o", bin,
		"-ldflags", "-X github.com/comb-broker/comb/cli.buildVersion=v9.8.7 -X github.com/comb-broker/comb/cli.buildDate=2026-12-01T00:00:00Z", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var outs []string
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("comb %s: %v", arg, err)
		}
		if !strings.HasPrefix(string(out), "comb v9.8.7\n") || !strings.Contains(string(out), "date:   2026-12-01T00:00:00Z\n") {
			t.Fatalf("comb %s printed %q, want version v9.8.7 and the stamped date", arg, out)
		}
		outs = append(outs, string(out))
	}
	if outs[0] != outs[1] {
		t.Fatalf("comb version and comb --version differ:\n%s\n%s", outs[0], outs[1])
	}

	// The go command finds a repository only by a .git directory: in a
	// linked worktree, where .git is a file, it stamps nothing.
	if fi, err := os.Stat("../.git"); err != nil || !fi.IsDir() {
		t.Skip("not the top of a git clone (.git is no directory): go build stamps no commit here")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	status, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "commit: " + strings.TrimSpace(string(head))
	if len(bytes.TrimSpace(status)) > 0 {
		want += " (modified)"
	}
	if !strings.Contains(outs[0], want+"\n") {
		t.Fatalf("comb version printed %q, want a line %q", outs[0], want)
	}
}
