package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// untar unpacks a tar file into dir, keeping modes and, as root, owners.
func untar(t *testing.T, r io.Reader, dir string) map[string]*tar.Header {
	t.Helper()
	heads := map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		heads[name] = h
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: unexpected entry type %c", h.Name, h.Typeflag)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(p, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	return heads
}

func modeBits(m int64) os.FileMode {
	var out os.FileMode
	if m&0o1000 != 0 {
		out |= os.ModeSticky
	}
	return out
}

// openImage reads the OCI archive back with go-containerregistry and
// returns the linux/amd64 image.
func openImage(t *testing.T, r *release) v1.Image {
	t.Helper()
	f, err := os.Open(artifact(t, r, "*_oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	untar(t, f, dir)
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1.2.3-test.1" ||
		topManifest.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: %+v; want one OCI index named 1.2.3-test.1", topManifest.Manifests)
	}
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil ||
		im.Manifests[0].Platform.String() != "linux/amd64" || im.Manifests[0].MediaType != types.OCIManifestSchema1 {
		t.Fatalf("platform manifests %+v, want one OCI manifest for linux/amd64 (the targets built)", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestImageConfig reads the image as a runtime would: its config, and
// every file of its filesystem.
func TestImageConfig(t *testing.T) {
	r, _ := dist(t)
	img := openImage(t, r)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/bin/comb"}) {
		t.Errorf("entrypoint %q", c.Entrypoint)
	}
	if !slices.Equal(c.Cmd, []string{"serve", "--addr", "0.0.0.0:6632", "--db", "/var/lib/comb/comb.db"}) {
		t.Errorf("cmd %q", c.Cmd)
	}
	if _, ok := c.Volumes["/var/lib/comb"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("volumes %v, want /var/lib/comb", c.Volumes)
	}
	if _, ok := c.ExposedPorts["6632/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 6632/tcp", c.ExposedPorts)
	}
	hc := c.Healthcheck
	if hc == nil || len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != "/usr/bin/comb" || hc.Test[2] != "healthcheck" ||
		hc.Interval <= 0 || hc.Timeout <= 0 || hc.Retries <= 0 {
		t.Errorf("healthcheck %+v, want CMD /usr/bin/comb healthcheck with interval, timeout and retries", hc)
	}
	if cf.Config.Labels["org.opencontainers.image.version"] != testVersion || cf.Config.Labels["org.opencontainers.image.revision"] != r.Commit {
		t.Errorf("labels %v", cf.Config.Labels)
	}
	if !cf.Created.Time.Equal(r.Date) {
		t.Errorf("created %v, want the commit time %v", cf.Created, r.Date)
	}

	heads := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		heads[strings.TrimSuffix(h.Name, "/")] = h
	}
	// No shell, nor anything else to run but comb.
	var executables []string
	for name, h := range heads {
		if h.Typeflag != tar.TypeDir && h.Mode&0o111 != 0 {
			executables = append(executables, name)
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			t.Errorf("link %s -> %s in the image", name, h.Linkname)
		}
	}
	if !slices.Equal(executables, []string{"usr/bin/comb"}) {
		t.Errorf("executables in the image: %v, want only usr/bin/comb", executables)
	}
	for _, sh := range []string{"bin/sh", "usr/bin/sh", "bin/bash", "bin/busybox"} {
		if heads[sh] != nil {
			t.Errorf("the image has %s", sh)
		}
	}
	if h := heads["var/lib/comb"]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 65532 || h.Gid != 65532 || h.Mode&0o777 != 0o750 {
		t.Errorf("var/lib/comb %+v, want a directory 0750 owned by 65532", h)
	}
	if h := heads["etc/passwd"]; h == nil {
		t.Error("no etc/passwd")
	}
}

// TestImageRuns unpacks the image and runs it the way a container runtime
// would, without one: its command as its user, chrooted into its
// filesystem, in a network namespace of its own (so it may bind 6632),
// then its health check command in the same namespace and root.
func TestImageRuns(t *testing.T) {
	r, _ := dist(t)
	img := openImage(t, r)
	rootfs := t.TempDir()
	os.Chmod(rootfs, 0o755)
	heads := untar(t, mutate.Extract(img), rootfs)
	if heads["usr/bin/comb"] == nil {
		t.Fatal("no usr/bin/comb in the image")
	}
	bin := filepath.Join(rootfs, "usr", "bin", "comb")
	checkVersion(t, r, bin)
	checkStatic(t, bin)

	needRoot(t, "unshare", "nsenter", "chroot", "ip")
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	userspec := "--userspec=" + c.User
	argv := append(append([]string{}, c.Entrypoint...), c.Cmd...)
	// "docker run -e COMB_ALLOW_INSECURE_BIND=1", as docs/install.md shows.
	env := append(append([]string{}, c.Env...), "COMB_ALLOW_INSECURE_BIND=1")
	ip, _ := exec.LookPath("ip")
	chroot, _ := exec.LookPath("chroot")
	script := `"$0" link set lo up && exec "$@"`
	cmd := exec.Command("unshare", append([]string{"--net", "--", "/bin/sh", "-c", script, ip, chroot, userspec, rootfs}, argv...)...)
	cmd.Env = env
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()
	pid := strconv.Itoa(cmd.Process.Pid)

	// The health check as the runtime runs it: in the container, as its user.
	health := append([]string{"--net=/proc/" + pid + "/ns/net", "--", "chroot", userspec, rootfs}, c.Healthcheck.Test[1:]...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.Command("nsenter", health...).CombinedOutput()
		if err == nil {
			if !strings.Contains(string(out), `"status":"healthy"`) {
				t.Fatalf("health check printed %q", out)
			}
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the container's command exited: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("health check still failing after 60s: %v\n%s\nlogs:\n%s", err, out, logs.String())
		}
		time.Sleep(200 * time.Millisecond) // polling the command a runtime polls every 30s
	}
	fi, err := os.Stat(filepath.Join(rootfs, "var", "lib", "comb", "comb.db"))
	if err != nil {
		t.Fatalf("no database in the volume: %v\nlogs:\n%s", err, logs.String())
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65532 {
		t.Errorf("comb.db owned by %d, want 65532", st.Uid)
	}
	cmd.Process.Signal(syscall.SIGTERM) // the image's StopSignal
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("container command after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60s after SIGTERM\n%s", logs.String())
	}
}
