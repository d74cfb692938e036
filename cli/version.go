package cli

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Set by the release build (scripts/release) with
// -ldflags "-X github.com/comb-broker/comb/cli.buildVersion=... (and buildCommit, buildDate)".
// Left empty by go build and go install, whose binaries describe themselves
// through the build information the Go toolchain embeds instead.
var (
	buildVersion string
	buildCommit  string
	buildDate    string
)

// version is what this binary calls itself in /health, logs and
// "comb version"; fixed once at start.
var version = readBuildInfo().Version

// buildInfo says which source a binary was built from.
type buildInfo struct {
	Version  string // release version, module version, or "devel"
	Commit   string // VCS revision, "" when unknown
	Date     string // commit or release time, RFC 3339, "" when unknown
	Modified bool   // built from a checkout with uncommitted changes
	Go       string // toolchain, e.g. go1.26.8
}

func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return resolveBuildInfo(bi, buildVersion, buildCommit, buildDate)
}

// resolveBuildInfo prefers what the release build stamped, then what the
// toolchain recorded: the module version for "go install module@version",
// and vcs.revision, vcs.time and vcs.modified for "go build" in a checkout
// (unless built with -buildvcs=false).
func resolveBuildInfo(bi *debug.BuildInfo, ldVersion, ldCommit, ldDate string) buildInfo {
	out := buildInfo{Version: ldVersion, Commit: ldCommit, Date: ldDate, Go: runtime.Version()}
	if bi == nil {
		out.Version = cmp.Or(out.Version, "devel")
		return out
	}
	out.Go = cmp.Or(bi.GoVersion, out.Go)
	if out.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		out.Version = bi.Main.Version
	}
	var revision, time string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			time = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if out.Commit == "" {
		// Only the toolchain's revision comes with a modified flag that
		// belongs to it; a stamped commit was checked by the release build.
		out.Commit, out.Modified = revision, modified
	}
	out.Date = cmp.Or(out.Date, time)
	out.Version = cmp.Or(out.Version, "devel")
	return out
}

// print writes the build information the way "comb version" shows it:
// the version alone on the first line, for scripts, then the details.
func (b buildInfo) print(w io.Writer) {
	fmt.Fprintf(w, "comb %s\n", b.Version)
	commit := cmp.Or(b.Commit, "unknown")
	if b.Modified {
		commit += " (modified)"
	}
	fmt.Fprintf(w, "commit: %s\n", commit)
	fmt.Fprintf(w, "date:   %s\n", cmp.Or(b.Date, "unknown"))
	fmt.Fprintf(w, "go:     %s %s/%s\n", b.Go, runtime.GOOS, runtime.GOARCH)
}
