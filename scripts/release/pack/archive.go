package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const checksumFile = "SHA256SUMS"

// archiveFile is one file in a release archive.
type archiveFile struct {
	src  string // path on disk
	name string // path inside the archive, below its top directory
	mode fs.FileMode
}

// archiveFiles lists what goes beside the binary: the README, the
// changelog, LICENSE when there is one, the docs, and the service files.
func (r *release) archiveFiles(t target, bin string) ([]archiveFile, error) {
	files := []archiveFile{{src: bin, name: t.exe(), mode: 0o755}}
	for _, name := range []string{"README.md", "CHANGELOG.md", "LICENSE"} {
		src := filepath.Join(r.Root, name)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) && name == "LICENSE" {
			continue
		} else if err != nil {
			return nil, err
		}
		files = append(files, archiveFile{src: src, name: name, mode: 0o644})
	}
	for _, dir := range []string{"docs", "packaging"} {
		entries, err := os.ReadDir(filepath.Join(r.Root, dir))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, archiveFile{src: filepath.Join(r.Root, dir, e.Name()), name: dir + "/" + e.Name(), mode: 0o644})
			}
		}
	}
	return files, nil
}

// archive writes comb_VERSION_OS_ARCH.tar.gz, or .zip for Windows, with
// one top directory of the same name. Entries are sorted and stamped with
// the commit time, so the same commit gives the same archive.
func (r *release) archive(t target, bin string) (string, error) {
	files, err := r.archiveFiles(t, bin)
	if err != nil {
		return "", err
	}
	slices.SortFunc(files, func(a, b archiveFile) int { return strings.Compare(a.name, b.name) })
	top := fmt.Sprintf("comb_%s_%s", r.fileVersion(), t.slug())
	name := top + ".tar.gz"
	if t.GOOS == "windows" {
		name = top + ".zip"
	}
	f, err := os.Create(filepath.Join(r.Dist, name))
	if err != nil {
		return "", err
	}
	defer f.Close()
	if t.GOOS == "windows" {
		err = r.writeZip(f, top, files)
	} else {
		err = r.writeTarGz(f, top, files)
	}
	if err != nil {
		return "", err
	}
	return name, f.Close()
}

func (r *release) writeTarGz(w io.Writer, top string, files []archiveFile) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for _, f := range files {
		// Each directory once, before its first file.
		for _, d := range parents(top + "/" + f.name) {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: r.Date, Format: tar.FormatPAX}); err != nil {
					return err
				}
			}
		}
		data, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + f.name, Mode: int64(f.mode),
			Size: int64(len(data)), ModTime: r.Date, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// parents lists the directories above a slash path, outermost first.
func parents(p string) []string {
	var out []string
	for d := filepath.ToSlash(filepath.Dir(p)); d != "." && d != "/"; d = filepath.ToSlash(filepath.Dir(d)) {
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

func (r *release) writeZip(w io.Writer, top string, files []archiveFile) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: top + "/" + f.name, Method: zip.Deflate, Modified: r.Date}
		h.SetMode(f.mode)
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// writeChecksums writes SHA256SUMS in the format sha256sum -c reads.
func writeChecksums(dir string, names []string) error {
	names = slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, name := range names {
		sum, err := sha256File(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	return os.WriteFile(filepath.Join(dir, checksumFile), []byte(b.String()), 0o644)
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
