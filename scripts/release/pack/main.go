// Command pack builds comb's release artifacts: static binaries for every
// target, their archives, Linux packages (.deb, .rpm, .apk), an OCI image
// archive and SHA256SUMS, all into one directory. It is its own module so
// that nfpm and go-containerregistry stay out of comb's go.mod; run it as
// "go run ./scripts/release" from the repository root.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// target is one platform comb is released for.
type target struct {
	GOOS, GOARCH, GOARM string
}

// allTargets: desktops, servers and the Raspberry Pi (ARMv7, 32-bit).
var allTargets = []target{
	{"linux", "amd64", ""},
	{"linux", "arm64", ""},
	{"linux", "arm", "7"},
	{"darwin", "amd64", ""},
	{"darwin", "arm64", ""},
	{"windows", "amd64", ""},
}

// String is the target as -targets spells it: linux/arm/v7.
func (t target) String() string {
	s := t.GOOS + "/" + t.GOARCH
	if t.GOARM != "" {
		s += "/v" + t.GOARM
	}
	return s
}

// slug names the target in file names: linux_armv7.
func (t target) slug() string { return t.GOOS + "_" + t.GOARCH + vPrefix(t.GOARM) }

func vPrefix(goarm string) string {
	if goarm == "" {
		return ""
	}
	return "v" + goarm
}

func (t target) exe() string {
	if t.GOOS == "windows" {
		return "comb.exe"
	}
	return "comb"
}

func parseTargets(s string) ([]target, error) {
	if s == "" || s == "all" {
		return allTargets, nil
	}
	var out []target
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, t := range allTargets {
			if t.String() == strings.TrimSpace(name) {
				out, found = append(out, t), true
			}
		}
		if !found {
			var names []string
			for _, t := range allTargets {
				names = append(names, t.String())
			}
			return nil, fmt.Errorf("unknown target %q; known: %s", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// release is one run: what is built, from which source, into where.
type release struct {
	Root    string    // repository root
	Dist    string    // output directory
	Version string    // v-prefixed, as comb version prints it
	Commit  string    // full revision
	Date    time.Time // commit time: every timestamp in the artifacts
	Targets []target
	Log     func(format string, args ...any)
}

// options are the command's flags.
type options struct {
	root, dist, version, targets string
	packages, image              bool
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", "", "repository root (default: found from the working directory)")
	flag.StringVar(&o.dist, "dist", "", "output directory, emptied first (default ROOT/dist)")
	flag.StringVar(&o.version, "version", "", "version to stamp, e.g. v0.2.0 (default: git describe, else a pseudo-version)")
	flag.StringVar(&o.targets, "targets", "all", "comma-separated targets, e.g. linux/amd64,windows/amd64")
	flag.BoolVar(&o.packages, "packages", true, "build .deb, .rpm and .apk for the linux targets")
	flag.BoolVar(&o.image, "image", true, "build the OCI image archive for the linux targets")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	r, err := newRelease(ctx, o)
	if err != nil {
		return err
	}
	artifacts, err := r.build(ctx, o.packages, o.image)
	if err != nil {
		return err
	}
	for _, a := range artifacts {
		fi, err := os.Stat(filepath.Join(r.Dist, a))
		if err != nil {
			return err
		}
		fmt.Printf("%10d  %s\n", fi.Size(), filepath.Join(r.Dist, a))
	}
	return nil
}

// newRelease finds the source and reads its version from git.
func newRelease(ctx context.Context, o options) (*release, error) {
	root := o.root
	if root == "" {
		var err error
		if root, err = findRoot(); err != nil {
			return nil, err
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	r := &release{Root: root, Dist: o.dist, Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }}
	if r.Dist == "" {
		r.Dist = filepath.Join(root, "dist")
	}
	if r.Targets, err = parseTargets(o.targets); err != nil {
		return nil, err
	}
	if r.Commit, err = git(ctx, root, "rev-parse", "HEAD"); err != nil {
		return nil, err
	}
	ct, err := git(ctx, root, "show", "-s", "--format=%ct", "HEAD")
	if err != nil {
		return nil, err
	}
	var secs int64
	if _, err := fmt.Sscan(ct, &secs); err != nil {
		return nil, fmt.Errorf("commit time %q: %w", ct, err)
	}
	r.Date = time.Unix(secs, 0).UTC()
	r.Version = o.version
	if r.Version == "" {
		if r.Version, err = gitVersion(ctx, root, r.Commit, r.Date); err != nil {
			return nil, err
		}
	}
	if !strings.HasPrefix(r.Version, "v") {
		r.Version = "v" + r.Version
	}
	return r, nil
}

// gitVersion is the newest v-tag, with git's -N-gHASH suffix past it, or
// else a Go-style pseudo-version; "-dirty" marks uncommitted changes.
func gitVersion(ctx context.Context, root, commit string, date time.Time) (string, error) {
	if v, err := git(ctx, root, "describe", "--tags", "--match", "v[0-9]*", "--dirty"); err == nil {
		return v, nil
	}
	v := fmt.Sprintf("v0.0.0-%s-%s", date.Format("20060102150405"), commit[:12])
	status, err := git(ctx, root, "status", "--porcelain")
	if err != nil {
		return "", err
	}
	if status != "" {
		v += "-dirty"
	}
	return v, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// findRoot walks up from the working directory to comb's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/comb-broker/comb\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("comb's go.mod not found above the working directory; pass -root")
		}
		dir = parent
	}
}

// fileVersion is the version as file names carry it: 0.2.0.
func (r *release) fileVersion() string { return strings.TrimPrefix(r.Version, "v") }

// build makes every artifact into r.Dist and returns their names there.
func (r *release) build(ctx context.Context, packages, image bool) ([]string, error) {
	if err := os.RemoveAll(r.Dist); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.Dist, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "comb-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var artifacts []string
	binaries := map[target]string{}
	for _, t := range r.Targets {
		bin := filepath.Join(tmp, t.slug(), t.exe())
		r.Log("build %s", t)
		if err := r.compile(ctx, t, bin); err != nil {
			return nil, err
		}
		binaries[t] = bin
		name, err := r.archive(t, bin)
		if err != nil {
			return nil, fmt.Errorf("archive %s: %w", t, err)
		}
		artifacts = append(artifacts, name)
	}
	var linux []target
	for _, t := range r.Targets {
		if t.GOOS == "linux" {
			linux = append(linux, t)
		}
	}
	if packages {
		for _, t := range linux {
			for _, format := range []string{"deb", "rpm", "apk"} {
				r.Log("package %s %s", format, t)
				name, err := r.pkg(t, format, binaries[t])
				if err != nil {
					return nil, fmt.Errorf("%s for %s: %w", format, t, err)
				}
				artifacts = append(artifacts, name)
			}
		}
	}
	if image && len(linux) > 0 {
		r.Log("image %s", linux)
		name, err := r.image(linux, binaries, filepath.Join(tmp, "oci"))
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		artifacts = append(artifacts, name)
	}
	if err := writeChecksums(r.Dist, artifacts); err != nil {
		return nil, err
	}
	return append(artifacts, checksumFile), nil
}

// versionPackage holds the variables the release build stamps; package
// main at the module root only calls it.
const versionPackage = "github.com/comb-broker/comb/cli"

// compile builds one static binary, stamped with version, commit and date.
func (r *release) compile(ctx context.Context, t target, out string) error {
	ldflags := fmt.Sprintf("-s -w -X %[1]s.buildVersion=%[2]s -X %[1]s.buildCommit=%[3]s -X %[1]s.buildDate=%[4]s",
		versionPackage, r.Version, r.Commit, r.Date.Format(time.RFC3339))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, ".")
	cmd.Dir = r.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "GOARM="+t.GOARM,
		"GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", t, err, out)
	}
	return nil
}
