//go:build !windows

package cli

import (
	"context"
	"errors"
)

// service explains where services come from on this system.
func (m *App) service(context.Context, string, string, []string) error {
	return errors.New("service: Windows only; on Linux use the packaged systemd unit, on macOS the launchd plist (docs/install.md)")
}

// runAsService: only Windows has a service manager that starts comb
// through this code; systemd and launchd run "comb serve" directly.
func (m *App) runAsService([]string) (bool, error) { return false, nil }
