//go:build !windows

package main

import (
	"context"
	"errors"
)

// service explains where services come from on this system.
func (m *Main) service(context.Context, []string) error {
	return errors.New("service: Windows only; on Linux use the packaged systemd unit, on macOS the launchd plist (docs/install.md)")
}

// runAsService: only Windows has a service manager that starts comb
// through this code; systemd and launchd run "comb serve" directly.
func (m *Main) runAsService([]string) (bool, error) { return false, nil }
