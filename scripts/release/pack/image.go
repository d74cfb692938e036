package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: the numeric id distroless images call nonroot, so a
// runtime that refuses root can check it without an /etc/passwd lookup.
const (
	imageUID  = 65532
	imageDir  = "/var/lib/comb"
	imagePort = "6632"
)

// hostCACerts is copied into the image so that forwarders reach an
// upstream Queen over TLS; the image has no package manager to add it.
const hostCACerts = "/etc/ssl/certs/ca-certificates.crt"

// imageConfig is the run configuration every platform's image carries.
func (r *release) imageConfig() v1.Config {
	return v1.Config{
		User:       fmt.Sprintf("%d:%d", imageUID, imageUID),
		Entrypoint: []string{"/usr/bin/comb"},
		// serve refuses a non-loopback address without auth: pass
		// COMB_JWT_SECRET (or another key) or COMB_ALLOW_INSECURE_BIND=true
		// (docs/install.md).
		Cmd:          []string{"serve", "--addr", "0.0.0.0:" + imagePort, "--db", imageDir + "/comb.db"},
		Env:          []string{"PATH=/usr/bin"},
		WorkingDir:   imageDir,
		Volumes:      map[string]struct{}{imageDir: {}},
		ExposedPorts: map[string]struct{}{imagePort + "/tcp": {}},
		StopSignal:   "SIGTERM",
		Healthcheck: &v1.HealthConfig{
			Test:        []string{"CMD", "/usr/bin/comb", "healthcheck", "--url", "http://127.0.0.1:" + imagePort, "--timeout", "4s"},
			Interval:    30 * time.Second,
			Timeout:     5 * time.Second,
			StartPeriod: 10 * time.Second,
			Retries:     3,
		},
		Labels: r.imageLabels(),
	}
}

func (r *release) imageLabels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "comb",
		"org.opencontainers.image.description": "SQLite-first message broker for the edge, speaking Queen's HTTP API",
		"org.opencontainers.image.version":     r.Version,
		"org.opencontainers.image.revision":    r.Commit,
		"org.opencontainers.image.created":     r.Date.Format(time.RFC3339),
		"org.opencontainers.image.source":      "https://github.com/comb-broker/comb",
	}
}

// image writes comb_VERSION_oci.tar: an OCI image layout, tarred, holding
// one index with an image per linux target. Each image is one layer on
// nothing (no shell, no package manager): the static binary, passwd and
// group entries for its user, CA certificates, /tmp and the state
// directory owned by the user. No Docker daemon is involved.
func (r *release) image(targets []target, binaries map[target]string, tmp string) (string, error) {
	var certs []byte
	if b, err := os.ReadFile(hostCACerts); err == nil {
		certs = b
	} else {
		r.Log("warning: %s: %v; the image will have no CA certificates, and forwarders no TLS upstreams", hostCACerts, err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, t := range targets {
		img, err := r.platformImage(t, binaries[t], certs)
		if err != nil {
			return "", fmt.Errorf("%s: %w", t, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: platform(t)}})
	}
	idx = mutate.Annotations(idx, r.imageLabels()).(v1.ImageIndex)
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": r.fileVersion(),
	})); err != nil {
		return "", err
	}
	name := fmt.Sprintf("comb_%s_oci.tar", r.fileVersion())
	return name, r.tarDir(tmp, filepath.Join(r.Dist, name))
}

func platform(t target) *v1.Platform {
	return &v1.Platform{OS: t.GOOS, Architecture: t.GOARCH, Variant: vPrefix(t.GOARM)}
}

func (r *release) platformImage(t target, bin string, certs []byte) (v1.Image, error) {
	layerTar, err := r.rootfs(bin, certs)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	p := platform(t)
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: r.Date},
		Config:       r.imageConfig(),
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
		Created:   v1.Time{Time: r.Date},
		CreatedBy: "scripts/release: comb " + r.Version,
	}})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// rootfs is the image's only layer, as an uncompressed tar.
func (r *release) rootfs(bin string, certs []byte) ([]byte, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	type entry struct {
		name     string
		mode     int64
		uid      int
		data     []byte
		dir      bool
		skipFile bool
	}
	id := fmt.Sprint(imageUID)
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\ncomb:x:" + id + ":\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\ncomb:x:" + id + ":" + id + ":comb:" + imageDir + ":/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true, skipFile: certs == nil},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true, skipFile: certs == nil},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs, skipFile: certs == nil},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/bin/", mode: 0o755, dir: true},
		{name: "usr/bin/comb", mode: 0o755, data: exe},
		{name: "var/", mode: 0o755, dir: true},
		{name: "var/lib/", mode: 0o755, dir: true},
		{name: imageDir[1:] + "/", mode: 0o750, uid: imageUID, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if e.skipFile {
			continue
		}
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: r.Date, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir tars an OCI layout directory with sorted entries and fixed times.
func (r *release) tarDir(dir, out string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: r.Date, Format: tar.FormatPAX}
		switch {
		case fi.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
		case fi.Mode().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		default:
			return fmt.Errorf("%s: not a file or directory", name)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			src, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			src.Close()
			if err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
