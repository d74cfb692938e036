//go:build windows

package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"
)

// service runs "comb service ACTION": serveArgs are install's flags
// after --.
func (m *App) service(ctx context.Context, action, name string, serveArgs []string) error {
	manager, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service: connect to the service manager (run as administrator): %w", err)
	}
	defer manager.Disconnect()
	switch action {
	case "install":
		return m.installService(manager, name, serveArgs)
	case "uninstall":
		return uninstallService(ctx, manager, name)
	case "start":
		s, err := manager.OpenService(name)
		if err != nil {
			return fmt.Errorf("service start: open %s: %w", name, err)
		}
		defer s.Close()
		if err := s.Start(); err != nil {
			return fmt.Errorf("service start %s: %w", name, err)
		}
		return waitService(ctx, s, svc.Running)
	case "stop":
		s, err := manager.OpenService(name)
		if err != nil {
			return fmt.Errorf("service stop: open %s: %w", name, err)
		}
		defer s.Close()
		if _, err := s.Control(svc.Stop); err != nil {
			return fmt.Errorf("service stop %s: %w", name, err)
		}
		return waitService(ctx, s, svc.Stopped)
	default:
		return fmt.Errorf("service: unknown action %q", action)
	}
}

func (m *App) installService(manager *mgr.Mgr, name string, serveArgs []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if len(serveArgs) == 0 {
		dir := filepath.Join(cmp.Or(os.Getenv("ProgramData"), `C:\ProgramData`), "comb")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("service install: %w", err)
		}
		serveArgs = []string{"--db", filepath.Join(dir, "comb.db")}
	}
	if s, err := manager.OpenService(name); err == nil {
		s.Close()
		return fmt.Errorf("service install: %s already exists; comb service uninstall --name %s first", name, name)
	}
	s, err := manager.CreateService(name, exe, mgr.Config{
		DisplayName: "comb message broker",
		Description: "SQLite-first message broker speaking Queen's HTTP API",
		StartType:   mgr.StartAutomatic,
	}, append([]string{"serve"}, serveArgs...)...)
	if err != nil {
		return fmt.Errorf("service install %s: %w", name, err)
	}
	defer s.Close()
	// Restart after a crash or a failed start, at most every few seconds.
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 30 * time.Second},
	}, uint32((24 * time.Hour).Seconds())); err != nil {
		return fmt.Errorf("service install %s: recovery actions: %w", name, err)
	}
	if err := eventlog.InstallAsEventCreate(name, eventlog.Error|eventlog.Warning|eventlog.Info); err != nil &&
		!strings.Contains(err.Error(), "exists") {
		return fmt.Errorf("service install %s: event log source: %w", name, err)
	}
	fmt.Fprintf(m.Stdout, "installed service %s: %s serve %s\nstart it with: comb service start\n", name, exe, strings.Join(serveArgs, " "))
	return nil
}

func uninstallService(ctx context.Context, manager *mgr.Mgr, name string) error {
	s, err := manager.OpenService(name)
	if err != nil {
		return fmt.Errorf("service uninstall: open %s: %w", name, err)
	}
	defer s.Close()
	if st, err := s.Query(); err == nil && st.State != svc.Stopped {
		if _, err := s.Control(svc.Stop); err == nil {
			if err := waitService(ctx, s, svc.Stopped); err != nil {
				return err
			}
		}
	}
	if err := s.Delete(); err != nil {
		return fmt.Errorf("service uninstall %s: %w", name, err)
	}
	_ = eventlog.Remove(name) // absent when install failed half-way
	return nil
}

// waitService polls until the service reaches want, ctx ends or a minute passes.
func waitService(ctx context.Context, s *mgr.Service, want svc.State) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		st, err := s.Query()
		if err != nil {
			return fmt.Errorf("service: query: %w", err)
		}
		if st.State == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("service: still in state %d: %w", st.State, ctx.Err())
		case <-t.C:
		}
	}
}

// runAsService runs the command under the Service Control Manager when
// the process was started by it, and reports whether it was.
func (m *App) runAsService(args []string) (bool, error) {
	isService, err := svc.IsWindowsService()
	if err != nil || !isService {
		return false, err
	}
	name := "comb"
	elog, err := eventlog.Open(name)
	if err != nil {
		return true, fmt.Errorf("open event log: %w", err)
	}
	defer elog.Close()
	sm := *m
	sm.Stderr = eventWriter{elog}
	sm.Stdout = eventWriter{elog}
	return true, svc.Run(name, &serviceHandler{m: &sm, args: args})
}

// serviceHandler runs "comb serve" between the manager's start and stop.
type serviceHandler struct {
	m    *App
	args []string
}

func (h *serviceHandler) Execute(_ []string, requests <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	m := *h.m
	m.Ready = func(string) { close(ready) }
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, h.args) }()
	const accepts = svc.AcceptStop | svc.AcceptShutdown
	for {
		select {
		case <-ready:
			ready = nil
			status <- svc.Status{State: svc.Running, Accepts: accepts}
		case err := <-done:
			if err != nil {
				fmt.Fprintf(m.Stderr, "level=ERROR msg=%q\n", err.Error())
				return true, 1
			}
			return false, 0
		case r := <-requests:
			switch r.Cmd {
			case svc.Interrogate:
				status <- r.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
			}
		}
	}
}

// eventWriter sends each log line to the Windows event log at the level
// slog's text handler wrote into it.
type eventWriter struct{ l *eventlog.Log }

func (w eventWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		var err error
		switch {
		case strings.Contains(line, "level=ERROR"):
			err = w.l.Error(1, line)
		case strings.Contains(line, "level=WARN"):
			err = w.l.Warning(1, line)
		default:
			err = w.l.Info(1, line)
		}
		if err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
