package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testVersion is stamped into the test build; nfpm turns its pre-release
// part into the package version 1.2.3~test.1.
const testVersion = "v1.2.3-test.1"

// The artifacts are built once per test binary: linux/amd64 (tar.gz,
// packages, image) and windows/amd64 (zip), which covers every code path.
var (
	buildOnce sync.Once
	built     *release
	builtList []string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// dist builds the artifacts (once) and returns the release and their names.
func dist(t *testing.T) (*release, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds comb for two targets")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "comb-release-test-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		built, buildErr = newRelease(ctx, options{
			root: "../../..", dist: filepath.Join(buildDir, "dist"), version: testVersion,
			targets: "linux/amd64,windows/amd64",
		})
		if buildErr != nil {
			return
		}
		built.Log = func(string, ...any) {}
		builtList, buildErr = built.build(ctx, true, true)
	})
	if buildErr != nil {
		t.Fatalf("release build: %v", buildErr)
	}
	return built, builtList
}

// artifact returns the path of the one artifact whose name matches glob.
func artifact(t *testing.T, r *release, glob string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(r.Dist, glob))
	if err != nil || len(m) != 1 {
		t.Fatalf("artifacts matching %s: %v %v", glob, m, err)
	}
	return m[0]
}

func TestArtifactNames(t *testing.T) {
	_, names := dist(t)
	want := []string{
		"SHA256SUMS",
		"comb-1.2.3~test.1-1.x86_64.rpm",
		"comb_1.2.3-test.1_linux_amd64.tar.gz",
		"comb_1.2.3-test.1_oci.tar",
		"comb_1.2.3-test.1_windows_amd64.zip",
		"comb_1.2.3~test.1_amd64.deb",
		"comb_1.2.3_test.1_x86_64.apk",
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Fatalf("artifacts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestChecksums runs the real sha256sum over SHA256SUMS.
func TestChecksums(t *testing.T) {
	r, names := dist(t)
	sums, err := os.ReadFile(filepath.Join(r.Dist, checksumFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(sums), "\n"); n != len(names)-1 {
		t.Fatalf("SHA256SUMS has %d lines for %d artifacts:\n%s", n, len(names)-1, sums)
	}
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("sha256sum not installed")
	}
	cmd := exec.Command("sha256sum", "--strict", "-c", checksumFile)
	cmd.Dir = r.Dist
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	// And it must notice a change.
	tampered := filepath.Join(t.TempDir(), "dist")
	if err := os.CopyFS(tampered, os.DirFS(r.Dist)); err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(tampered, "comb_1.2.3-test.1_windows_amd64.zip")
	f, err := os.OpenFile(zipPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	cmd = exec.Command("sha256sum", "--strict", "-c", checksumFile)
	cmd.Dir = tampered
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("sha256sum -c accepted a changed archive:\n%s", out)
	}
}

// tarEntries reads a .tar.gz into name -> header and contents.
func tarEntries(t *testing.T, path string) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	heads, data := map[string]*tar.Header{}, map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		heads[h.Name] = h
		if data[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	return heads, data
}

// TestLinuxArchive checks the archive's layout and runs its binary.
func TestLinuxArchive(t *testing.T) {
	r, _ := dist(t)
	heads, data := tarEntries(t, artifact(t, r, "*_linux_amd64.tar.gz"))
	top := "comb_1.2.3-test.1_linux_amd64/"
	for _, name := range []string{"comb", "README.md", "CHANGELOG.md", "docs/install.md", "docs/upgrade.md",
		"packaging/comb.service", "packaging/comb.env", "packaging/comb.toml", "packaging/com.comb-broker.comb.plist"} {
		h, ok := heads[top+name]
		if !ok {
			t.Errorf("archive lacks %s", top+name)
			continue
		}
		if !h.ModTime.Equal(r.Date) {
			t.Errorf("%s: mtime %v, want the commit time %v", name, h.ModTime, r.Date)
		}
	}
	if h := heads[top+"comb"]; h == nil || h.Mode != 0o755 {
		t.Fatalf("binary header %+v, want mode 0755", h)
	}
	bin := filepath.Join(t.TempDir(), "comb")
	if err := os.WriteFile(bin, data[top+"comb"], 0o755); err != nil {
		t.Fatal(err)
	}
	checkVersion(t, r, bin)
	checkStatic(t, bin)
}

// checkVersion runs "comb version" and compares it with the source.
func checkVersion(t *testing.T, r *release, bin string) {
	t.Helper()
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	want := fmt.Sprintf("comb %s\ncommit: %s\ndate:   %s\n", testVersion, r.Commit, r.Date.Format(time.RFC3339))
	if !strings.HasPrefix(string(out), want) {
		t.Fatalf("comb version printed\n%s\nwant it to start with\n%s", out, want)
	}
}

// checkStatic fails unless the ELF binary needs no dynamic loader or library.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("%s is dynamically linked (program header %v)", bin, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("%s needs %v", bin, libs)
	}
	if f.Section(".debug_info") != nil || f.Section(".symtab") != nil {
		t.Fatalf("%s carries debug information or a symbol table; built without -s -w?", bin)
	}
}

func TestWindowsArchive(t *testing.T) {
	r, _ := dist(t)
	zr, err := zip.OpenReader(artifact(t, r, "*_windows_amd64.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	top := "comb_1.2.3-test.1_windows_amd64/"
	names := map[string]*zip.File{}
	for _, f := range zr.File {
		names[f.Name] = f
	}
	for _, name := range []string{"comb.exe", "README.md", "docs/install.md"} {
		if names[top+name] == nil {
			t.Errorf("zip lacks %s", top+name)
		}
	}
	exe := names[top+"comb.exe"]
	if exe == nil {
		t.FailNow()
	}
	rc, err := exe.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 2)
	if _, err := io.ReadFull(rc, head); err != nil || string(head) != "MZ" {
		t.Fatalf("comb.exe starts with %q, want a PE executable (MZ)", head)
	}
}
