package cli

import (
	"github.com/spf13/cobra"
)

const serviceLong = `Windows only, from an elevated prompt. install registers this comb.exe
with the Service Control Manager to run "comb serve" at boot as
LocalSystem, restarted on failure, logging to the Application event log
under the service's name. Without SERVE-FLAGS the service runs
"comb serve --db %ProgramData%\comb\comb.db"; flags after -- replace
those, e.g.
  comb service install -- --db D:\comb\comb.db --addr 127.0.0.1:6632
or give them in a config file:
  comb service install -- --config C:\ProgramData\comb\comb.toml
Environment variables (COMB_JWT_SECRET and the rest) are the machine's.
On Linux use the packaged systemd unit, on macOS the launchd plist. See
docs/install.md.`

// serviceCmd is "comb service": its actions run on Windows only.
func (m *App) serviceCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install, start, stop or uninstall the Windows service",
		Long:  serviceLong,
		Args:  cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&name, "name", "comb", "service name")
	for _, a := range []struct{ use, short string }{
		{"install [-- SERVE-FLAGS...]", "Register comb serve with the Service Control Manager"},
		{"uninstall", "Stop and remove the service"},
		{"start", "Start the service and wait until it runs"},
		{"stop", "Stop the service and wait until it stopped"},
	} {
		sub := &cobra.Command{Use: a.use, Short: a.short, Args: cobra.NoArgs}
		if a.use != "uninstall" && a.use != "start" && a.use != "stop" {
			sub.Args = cobra.ArbitraryArgs
		}
		action := sub.Name()
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			if action == "install" && len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usageErrorf("service install: give serve's flags after --")
			}
			m.running = true
			return m.service(cmd.Context(), action, name, args)
		}
		cmd.AddCommand(sub)
	}
	return cmd
}
