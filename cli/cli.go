// Package cli is the comb command: its subcommands, their flags, the
// environment and the config file that set them, and their output. The
// root package main only calls Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes, documented in docs/operations.md: scripts tell a finding
// from a bad flag from a server they could not reach.
const (
	ExitOK          = 0 // done
	ExitFindings    = 1 // the command ran and found damage, or the server refused
	ExitUsage       = 2 // bad flag, argument, environment variable or config file
	ExitUnreachable = 3 // no answer from the server, or it did not accept the token
)

// exitError carries the exit code an error ends the process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a mistake in how comb was called: exit 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// unreachable wraps err as a failure to reach or be let in by the server:
// exit 3.
func unreachable(err error) error { return &exitError{code: ExitUnreachable, err: err} }

// ExitCode is the process exit code for err: nil is 0, an error without a
// code of its own 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitFindings
}

// Main runs the comb command with args (without the program name) and
// returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	m := &App{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv}
	// Started by the Windows service manager: serve until it says stop.
	if ran, err := m.runAsService(args); ran {
		if err != nil {
			fmt.Fprintln(stderr, "comb:", err)
			return ExitFindings
		}
		return ExitOK
	}
	err := m.Run(ctx, args)
	if err != nil {
		fmt.Fprintln(stderr, "comb:", err)
		if ExitCode(err) == ExitUsage {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", m.failedIn)
		}
	}
	return ExitCode(err)
}

// App is the comb command, testable without a process.
type App struct {
	Stdout, Stderr io.Writer
	// Stdin is watched for EOF by serve --exit-on-stdin-eof; nil never ends.
	Stdin  io.Reader
	Getenv func(string) string
	// Ready, if set, receives the listening address once serve accepts connections.
	Ready func(addr string)

	// failedIn is the command line ("comb serve") whose help a usage
	// error points to.
	failedIn string
	// running is set once a subcommand's own work began: an error before
	// that is a usage error.
	running bool
	// settings is where each setting of the running command came from.
	settings *settings
	// parsed, if set, is handed serve's flags instead of serving: tests
	// of how flags, environment and config file combine.
	parsed func(*serveConfig) error
	// progressEvery is how often check and backup print progress; 0 is
	// once a second. Tests shorten it to see lines on a small file.
	progressEvery time.Duration
}

const rootLong = `comb is a SQLite-first message broker speaking Queen's HTTP API.

Every flag of comb serve, and --url, --token and --output of the operator
commands, can also be set by an environment variable (COMB_ and the flag's
name in capitals, - as _: --max-db-bytes is COMB_MAX_DB_BYTES) or a key of
the TOML file --config names (env COMB_CONFIG): a flag wins over the
environment, which wins over the file, which wins over the default.

Exit codes: 0 ok; 1 findings (check, backup, restore) or refused; 2 a
usage error; 3 the server could not be reached or did not accept the token.`

// Run runs the subcommand named by args[0]. The error says what went
// wrong; ExitCode turns it into the process's exit code.
func (m *App) Run(ctx context.Context, args []string) error {
	m.failedIn, m.running, m.settings = "comb", false, newSettings()
	root := m.rootCmd()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if cmd != nil {
		m.failedIn = cmd.CommandPath()
	}
	if err != nil && !m.running && ExitCode(err) == ExitFindings {
		err = &exitError{code: ExitUsage, err: err}
	}
	return err
}

func (m *App) rootCmd() *cobra.Command {
	bi := readBuildInfo()
	var sb strings.Builder
	bi.print(&sb)
	root := &cobra.Command{
		Use:           "comb",
		Short:         "A SQLite-first message broker for the edge",
		Long:          rootLong,
		Version:       bi.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("a command is required")
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			m.failedIn = cmd.CommandPath()
			return m.applySettings(cmd)
		},
	}
	// Before the completion command is made: it keeps the writer it finds.
	root.SetIn(m.Stdin)
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	root.SetVersionTemplate(sb.String())
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		m.failedIn = cmd.CommandPath()
		return &exitError{code: ExitUsage, err: err}
	})
	root.PersistentFlags().String("config", "", "TOML file of settings, keys named as the flags (env COMB_CONFIG)")
	m.setting(root.PersistentFlags(), "config", "")
	root.AddGroup(&cobra.Group{ID: "server", Title: "Server:"}, &cobra.Group{ID: "ops", Title: "Operator commands (talk to a running server):"},
		&cobra.Group{ID: "file", Title: "Database files:"})
	root.SetHelpCommandGroupID("")
	for _, c := range []*cobra.Command{m.serveCmd(), m.serviceCmd(), m.healthcheckCmd()} {
		c.GroupID = "server"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{m.groupsCmd(), m.seekCmd(), m.dlqCmd(), m.quarantineCmd(), m.forwardCmd(), m.streamsCmd(), m.backupCmd()} {
		c.GroupID = "ops"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{m.checkCmd(), m.restoreCmd()} {
		c.GroupID = "file"
		root.AddCommand(c)
	}
	root.AddCommand(m.versionCmd())
	root.InitDefaultCompletionCmd()
	// A command that only groups others is a usage error on its own or
	// with an unknown action, not a page of help and exit 0.
	var needSub func(c *cobra.Command)
	needSub = func(c *cobra.Command) {
		if c.HasSubCommands() && c.RunE == nil && c.Run == nil {
			c.Args = cobra.NoArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				return usageErrorf("%s needs a subcommand", cmd.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			needSub(sub)
		}
	}
	needSub(root)
	return root
}

// run marks the start of a subcommand's own work: errors from here on are
// its own, not usage errors, unless it says so.
func (m *App) run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		m.running = true
		return fn(cmd, args)
	}
}

func (m *App) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date (also comb --version)",
		Args:  cobra.NoArgs,
		RunE: m.run(func(cmd *cobra.Command, args []string) error {
			readBuildInfo().print(m.Stdout)
			return nil
		}),
	}
}
