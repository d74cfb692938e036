package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/apk" // registers the packagers nfpm.Get finds
	_ "github.com/goreleaser/nfpm/v2/deb"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

// nfpmArch is nfpm's name for the target's architecture; nfpm turns it
// into each format's own (arm7: armhf for deb, armv7hl for rpm).
func (t target) nfpmArch() string { return t.GOARCH + t.GOARM }

// pkg builds one package from packaging/nfpm.yaml and returns its file name.
func (r *release) pkg(t target, format, bin string) (string, error) {
	vars := map[string]string{
		"BINARY":  bin,
		"ARCH":    t.nfpmArch(),
		"VERSION": r.Version,
	}
	var unknown []string
	cfg, err := nfpm.ParseFileWithEnvMapping(filepath.Join(r.Root, "packaging", "nfpm.yaml"), func(k string) string {
		v, ok := vars[k]
		if !ok && !strings.HasPrefix(k, "NFPM_") { // nfpm asks for its signing passphrases; none is set
			unknown = append(unknown, k)
		}
		return v
	})
	if err != nil {
		return "", err
	}
	if len(unknown) > 0 {
		// A typo in nfpm.yaml must not become an empty path.
		return "", fmt.Errorf("packaging/nfpm.yaml: unknown variables %q", unknown)
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	// Paths in nfpm.yaml are relative to the repository root.
	for _, c := range info.Contents {
		if c.Source != "" && !filepath.IsAbs(c.Source) {
			c.Source = filepath.Join(r.Root, c.Source)
		}
	}
	for _, s := range []*string{&info.Scripts.PreInstall, &info.Scripts.PostInstall, &info.Scripts.PreRemove, &info.Scripts.PostRemove} {
		if *s != "" && !filepath.IsAbs(*s) {
			*s = filepath.Join(r.Root, *s)
		}
	}
	info.MTime = r.Date
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	packager, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	name := packager.ConventionalFileName(info)
	info.Target = filepath.Join(r.Dist, name)
	f, err := os.Create(info.Target)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := packager.Package(info, f); err != nil {
		return "", err
	}
	return name, f.Close()
}
