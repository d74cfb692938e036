package main

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

// buildComb builds the command with extra go build arguments.
func buildComb(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "comb")
	cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, args...), ".")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, out)
	}
	return bin
}

func runVersion(t *testing.T, bin string, arg string) string {
	t.Helper()
	out, err := exec.Command(bin, arg).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", bin, arg, err)
	}
	return string(out)
}

// TestVersionOfReleaseBuild builds the binary the way scripts/release
// does and reads back what it stamped, through both spellings.
func TestVersionOfReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildComb(t, "-ldflags",
		"-X main.buildVersion=v9.8.7 -X main.buildCommit=abc123 -X main.buildDate=2026-12-01T00:00:00Z")
	for _, arg := range []string{"version", "--version"} {
		out := runVersion(t, bin, arg)
		for _, want := range []string{"comb v9.8.7\n", "commit: abc123\n", "date:   2026-12-01T00:00:00Z\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("comb %s printed %q, want it to hold %q", arg, out, want)
			}
		}
	}
}

// TestVersionOfGoBuild checks that a plain go build in a git checkout
// names the commit it was built from, and whether the tree was modified.
func TestVersionOfGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	// The go command finds a repository only by a .git directory: in a
	// linked worktree, where .git is a file, it stamps nothing.
	if fi, err := os.Stat(".git"); err != nil || !fi.IsDir() {
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
	bin := buildComb(t, "-buildvcs=true")
	out := runVersion(t, bin, "version")
	want := "commit: " + strings.TrimSpace(string(head))
	if len(bytes.TrimSpace(status)) > 0 {
		want += " (modified)"
	}
	if !strings.Contains(out, want+"\n") {
		t.Fatalf("comb version printed %q, want a line %q", out, want)
	}
	if strings.Contains(out, "date:   unknown") {
		t.Fatalf("comb version printed %q, want the commit time", out)
	}
}
