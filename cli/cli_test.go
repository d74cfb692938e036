package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/spf13/cobra"
)

// runMain runs cli.Main as the process would and returns its exit code,
// stdout and stderr.
func runMain(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
	return code, out.String(), errOut.String()
}

// TestEveryCommandsHelpGoesToStdoutAndExitsZero walks the whole command
// tree: -h and --help print help on stdout, nothing on stderr, exit 0.
func TestEveryCommandsHelpGoesToStdoutAndExitsZero(t *testing.T) {
	m := &App{Getenv: func(string) string { return "" }, settings: newSettings()}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(append([]string(nil), path...), sub.Name()))
			}
		}
	}
	walk(m.rootCmd(), nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, path := range paths {
		for _, h := range []string{"-h", "--help"} {
			code, out, errOut := runMain(t, nil, append(append([]string(nil), path...), h)...)
			if code != 0 || errOut != "" || !strings.Contains(out, "Usage:") {
				t.Errorf("comb %s %s: exit %d, stderr %q, stdout %q", strings.Join(path, " "), h, code, errOut, out)
			}
		}
	}
}

func TestVersionFlagMatchesVersionCommand(t *testing.T) {
	code, flag, _ := runMain(t, nil, "--version")
	code2, cmd, _ := runMain(t, nil, "version")
	if code != 0 || code2 != 0 || flag != cmd || !strings.HasPrefix(flag, "comb ") {
		t.Fatalf("--version (exit %d) %q, version (exit %d) %q", code, flag, code2, cmd)
	}
}

// TestUsageErrorsAreOneLineAndAHintWithExit2: no wall of help, and a code
// a script can tell from a finding or an unreachable server.
func TestUsageErrorsAreOneLineAndAHintWithExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"serve", "--no-such-flag"}, "comb serve"},
		{[]string{"no-such-command"}, "comb"},
		{nil, "comb"},
		{[]string{"groups", "extra"}, "comb groups"},
		{[]string{"forward", "frobnicate"}, "comb forward"},
		{[]string{"forward"}, "comb forward"},
		{[]string{"forward", "show"}, "comb forward show"},
		{[]string{"seek", "--queue", "q", "--to-end"}, "comb seek"},
		{[]string{"dlq", "purge"}, "comb dlq purge"},
		{[]string{"groups", "--output", "yaml"}, "comb groups"},
		{[]string{"serve", "--retention-interval", "soon"}, "comb serve"},
		{[]string{"serve", "--log-level", "chatty"}, "comb serve"},
		{[]string{"check", "--output", "xml"}, "comb check"},
		{[]string{"completion", "tcsh"}, "comb completion"},
	} {
		code, out, errOut := runMain(t, nil, tc.args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code != ExitUsage || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "comb: ") ||
			lines[1] != "Run '"+tc.hint+" --help' for usage." {
			t.Errorf("comb %q: exit %d, stdout %q, stderr %q; want exit 2 and two lines ending in the hint for %s", tc.args, code, out, errOut, tc.hint)
		}
	}
}

// TestExitCodesTellRefusedFromUnreachableFromUnauthorised runs the
// operator commands against a real server and against nothing.
func TestExitCodesTellRefusedFromUnreachableFromUnauthorised(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	env := map[string]string{"COMB_URL": srv.URL}
	if code, out, errOut := runMain(t, env, "groups"); code != ExitOK || !strings.Contains(out, "GROUP") {
		t.Errorf("groups: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := runMain(t, env, "dlq", "redrive", "--queue", "missing"); code != ExitFindings {
		t.Errorf("redrive of an unknown queue: exit %d (%s), want 1", code, errOut)
	}
	// Nothing listens on a port just closed.
	closed := crashFreeAddr(t)
	for _, args := range [][]string{{"groups"}, {"healthcheck"}, {"backup", "--out", filepath.Join(t.TempDir(), "copy.db")}} {
		if code, _, errOut := runMain(t, map[string]string{"COMB_URL": "http://" + closed}, args...); code != ExitUnreachable {
			t.Errorf("comb %v against nothing: exit %d (%s), want 3", args, code, errOut)
		}
	}
	keys := authtest.NewKeys(t)
	authed := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) {
		auth, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: keys.Secret})
		if err != nil {
			t.Fatal(err)
		}
		c.Auth = auth
	}})
	if code, _, errOut := runMain(t, map[string]string{"COMB_URL": authed.URL}, "groups"); code != ExitUnreachable {
		t.Errorf("groups without a token: exit %d (%s), want 3", code, errOut)
	}
	tok := keys.HS256(t, authtest.Claims("ops", "read-only", ""))
	if code, _, errOut := runMain(t, map[string]string{"COMB_URL": authed.URL}, "groups", "--token", tok); code != ExitOK {
		t.Errorf("groups --token: exit %d (%s)", code, errOut)
	}
	if code, _, errOut := runMain(t, map[string]string{"COMB_URL": authed.URL, "COMB_TOKEN": tok}, "groups"); code != ExitOK {
		t.Errorf("groups with COMB_TOKEN: exit %d (%s)", code, errOut)
	}
}

func TestOutputJSONIsOneDocumentPerCommand(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	opPush(srv, "orders", 0, 3)
	opDrain(t, srv, "orders", "billing")
	env := map[string]string{"COMB_URL": srv.URL, "COMB_OUTPUT": "json"}
	for _, args := range [][]string{{"groups"}, {"dlq"}, {"quarantine"},
		{"seek", "--group", "billing", "--queue", "orders", "--to-end", "--dry-run"}, {"dlq", "purge", "--all", "--dry-run"}} {
		code, out, errOut := runMain(t, env, args...)
		if code != 0 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !json.Valid([]byte(out)) {
			t.Errorf("comb %v with COMB_OUTPUT=json: exit %d, %q %q", args, code, out, errOut)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete", "zsh": "#compdef comb", "fish": "complete -c comb",
		"powershell": "Register-ArgumentCompleter"} {
		code, out, errOut := runMain(t, nil, "completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, %d bytes without %q", shell, code, errOut, len(out), want)
		}
	}
}

// printedConfig runs comb serve --print-config and returns the values and
// the source comments.
func printedConfig(t *testing.T, env map[string]string, args ...string) (map[string]any, map[string]string) {
	t.Helper()
	code, out, errOut := runMain(t, env, append([]string{"serve", "--print-config"}, args...)...)
	if code != 0 {
		t.Fatalf("serve --print-config %v: exit %d: %s", args, code, errOut)
	}
	vals := map[string]any{}
	if _, err := toml.Decode(out, &vals); err != nil {
		t.Fatalf("--print-config is no TOML: %v\n%s", err, out)
	}
	src := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, rest, ok := strings.Cut(line, " = ")
		if ok {
			_, src[k], _ = strings.Cut(rest, " # ")
		}
	}
	return vals, src
}

// TestSettingsPrecedenceFlagEnvFileDefault sets one key at each level and
// reads back what serve would run with.
func TestSettingsPrecedenceFlagEnvFileDefault(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "comb.toml")
	if err := os.WriteFile(file, []byte(`
addr = "127.0.0.1:7001"
db = "/from/file.db"
sync = "NORMAL"
retention-interval = "10m"
max-db-bytes = 1000000
jwt-secret = "file-secret-file-secret-file-secret"
forward = ["name=a,queue=q,upstream=http://127.0.0.1:1,token=hush"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COMB_CONFIG": file, "COMB_DB": "/from/env.db", "COMB_SYNC": "FULL",
		"COMB_LOG_LEVEL": "debug", "JWT_ISSUER": "https://old.name"}
	vals, src := printedConfig(t, env, "--addr", "127.0.0.1:7002", "--sync", "NORMAL")
	want := map[string]any{"addr": "127.0.0.1:7002", "db": "/from/env.db", "sync": "NORMAL", "retention-interval": "10m0s",
		"max-db-bytes": int64(1000000), "log-level": "debug", "log-format": "text", "jwt-secret": mask, "jwt-issuer": "https://old.name",
		"forward": []any{"name=a,queue=q,upstream=http://127.0.0.1:1,token=" + mask}}
	wantSrc := map[string]string{"addr": "flag", "db": "env COMB_DB", "sync": "flag", "retention-interval": "file " + file,
		"max-db-bytes": "file " + file, "log-level": "env COMB_LOG_LEVEL", "log-format": "default", "jwt-issuer": "env JWT_ISSUER"}
	for k, v := range want {
		if !equalTOML(vals[k], v) {
			t.Errorf("%s = %#v, want %#v", k, vals[k], v)
		}
	}
	for k, v := range wantSrc {
		if src[k] != v {
			t.Errorf("%s came from %q, want %q", k, src[k], v)
		}
	}
	// --config beats COMB_CONFIG; a flag beats both.
	other := filepath.Join(dir, "other.toml")
	if err := os.WriteFile(other, []byte("db = \"/from/other.db\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if vals, _ := printedConfig(t, map[string]string{"COMB_CONFIG": file}, "--config", other); vals["db"] != "/from/other.db" || vals["addr"] != "127.0.0.1:6632" {
		t.Errorf("--config other.toml: db %v addr %v", vals["db"], vals["addr"])
	}
}

func equalTOML(a, b any) bool {
	as, bs := strings.TrimSpace(toString(a)), strings.TrimSpace(toString(b))
	return as == bs
}

func toString(v any) string {
	var b bytes.Buffer
	_ = toml.NewEncoder(&b).Encode(map[string]any{"v": v})
	return b.String()
}

func TestConfigFileMistakesAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown key":  "adress = \"x\"\n",
		"bad value":    "retention-interval = \"soon\"\n",
		"not toml":     "addr: x\n",
		"table":        "[serve]\naddr = \"x\"\n",
		"list for one": "addr = [\"a\", \"b\"]\n",
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".toml")
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runMain(t, nil, "serve", "--config", file, "--print-config")
		if code != ExitUsage || !strings.Contains(errOut, file) {
			t.Errorf("%s: exit %d, %q", name, code, errOut)
		}
	}
	if code, _, errOut := runMain(t, nil, "serve", "--config", filepath.Join(dir, "missing.toml")); code != ExitUsage {
		t.Errorf("missing config: exit %d, %q", code, errOut)
	}
}

// TestOldEnvironmentNamesAndDurationFormsWarn: what worked before still
// works, and the log says what to write instead.
func TestOldEnvironmentNamesAndDurationFormsWarn(t *testing.T) {
	vals, _ := printedConfig(t, map[string]string{"JWT_CLOCK_SKEW": "7", "RETENTION_INTERVAL": "90000", "DEFAULT_SUBSCRIPTION_MODE": "new"})
	if vals["jwt-leeway"] != "7s" || vals["retention-interval"] != "1m30s" || vals["default-subscription-mode"] != "new" {
		t.Fatalf("old names read as %v %v %v", vals["jwt-leeway"], vals["retention-interval"], vals["default-subscription-mode"])
	}
	// serve logs the warnings once it has a logger; --log-format json makes them easy to find.
	logs := serveLogs(t, map[string]string{"JWT_CLOCK_SKEW": "7", "COMB_LOG_FORMAT": "json"}, "--retention-interval", "500")
	for _, want := range []string{`"level":"WARN","msg":"environment variable JWT_CLOCK_SKEW is an old name: use COMB_JWT_LEEWAY"`,
		`"msg":"--retention-interval 500: a bare number is read as milliseconds as before; write a Go duration: 500ms"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("--log-format json wrote a line that is no JSON: %q", line)
		}
	}
}

// serveLogs starts comb serve with env, stops it once it serves, and
// returns what it logged.
func serveLogs(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut combtest.Logs
	ready := make(chan string, 1)
	m := &App{Stdout: &bytes.Buffer{}, Stderr: &errOut, Getenv: func(k string) string { return env[k] },
		Ready: func(a string) { ready <- a }}
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "c.db")}, args...))
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, errOut.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return errOut.String()
}

func TestLogLevelAndFormat(t *testing.T) {
	if logs := serveLogs(t, nil); !strings.Contains(logs, "level=INFO msg=\"comb serving\"") {
		t.Errorf("default logs lack the text serving line:\n%s", logs)
	}
	if logs := serveLogs(t, map[string]string{"COMB_LOG_LEVEL": "error"}); logs != "" {
		t.Errorf("COMB_LOG_LEVEL=error still logged:\n%s", logs)
	}
	logs := serveLogs(t, nil, "--log-format", "json", "--log-level", "debug")
	if !strings.Contains(logs, `"msg":"comb serving"`) {
		t.Errorf("--log-format json lacks the serving line:\n%s", logs)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("--log-format json wrote a line that is no JSON: %q", line)
		}
	}
}
