// Command release builds comb's release artifacts into dist/: static
// archives for every target, .deb/.rpm/.apk packages, an OCI image archive
// and SHA256SUMS. Run it from the repository:
//
//	go run ./scripts/release [-version v0.2.0] [-targets linux/amd64,...]
//
// The work is done by the module in scripts/release/pack, which has its
// own go.mod so that the packaging libraries never enter comb's; this
// command only runs it, passing its flags on ("-h" lists them).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

func main() {
	root, err := findRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	args := append([]string{"-C", filepath.Join(root, "scripts", "release", "pack"), "run", ".", "-root", root}, os.Args[1:]...)
	cmd := exec.Command("go", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
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
			return "", errors.New("run it inside a clone of comb: its go.mod was not found above the working directory")
		}
		dir = parent
	}
}
