package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needRoot skips a test that changes the machine (packages, users,
// namespaces) unless it runs as root with the tools it names; under CI it
// fails instead, so CI cannot pass without running it.
func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but this test cannot run without %v", missing)
	}
	t.Skipf("needs %v", missing)
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	// dpkg refuses at once while an apt or dpkg run elsewhere on the
	// machine holds its lock; wait that out as apt's DPkg::Lock::Timeout
	// would, for up to five minutes.
	for i := 0; err != nil && strings.HasPrefix(name, "dpkg") && bytes.Contains(out, []byte("lock")) && i < 150; i++ {
		time.Sleep(2 * time.Second)
		out, err = exec.Command(name, args...).CombinedOutput()
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// unitSettings reads the [Service] keys of a unit file that the test
// applies itself, as systemd would.
func unitSettings(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			out[k] = v
		}
	}
	return out
}

// envFile reads VAR=value lines as systemd's EnvironmentFile= does for
// the simple, unquoted form the packaged file uses.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: line %q is no VAR=value", path, line)
		}
		out[k] = v
	}
	return out
}

// TestDebInstall installs the amd64 .deb with dpkg, runs comb serve as the
// packaged user with the packaged unit's settings and environment file,
// pushes and pops, upgrades in place, and removes and purges it.
//
// There is no systemd running as PID 1 here, so the test does what the
// unit tells systemd to do: run ExecStart as User/Group in
// WorkingDirectory with its UMask, no new privileges, no capabilities, the variables
// of EnvironmentFile, and a notify socket (with a short watchdog) it
// listens on itself. The unit file is checked with systemd-analyze.
func TestDebInstall(t *testing.T) {
	needRoot(t, "dpkg", "dpkg-query", "setpriv", "systemd-analyze")
	r, _ := dist(t)
	deb := artifact(t, r, "*_amd64.deb")
	if exec.Command("dpkg-query", "-W", "comb").Run() == nil {
		t.Fatal("a package named comb is installed already; dpkg --purge comb first")
	}
	_, userErr := user.Lookup("comb")
	userBefore := userErr == nil
	if exists("/var/lib/comb") || exists("/etc/comb") {
		t.Fatal("/var/lib/comb or /etc/comb exists already; this test would mix with them")
	}
	t.Cleanup(func() {
		exec.Command("dpkg", "--purge", "comb").Run()
		if !userBefore {
			exec.Command("userdel", "comb").Run()
			exec.Command("groupdel", "comb").Run()
		}
		os.RemoveAll("/var/lib/comb")
	})

	mustRun(t, "dpkg", "-i", deb)

	if v := mustRun(t, "dpkg-query", "-W", "-f", "${Version}", "comb"); v != "1.2.3~test.1" {
		t.Errorf("installed version %q, want 1.2.3~test.1", v)
	}
	if cf := mustRun(t, "dpkg-query", "-W", "-f", "${Conffiles}", "comb"); !strings.Contains(cf, "/etc/comb/comb.env") ||
		!strings.Contains(cf, "/etc/comb/comb.toml") {
		t.Errorf("conffiles %q lack /etc/comb/comb.env or /etc/comb/comb.toml", cf)
	}
	checkVersion(t, r, "/usr/bin/comb")

	u, err := user.Lookup("comb")
	if err != nil {
		t.Fatalf("no comb user after install: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 || uid >= 1000 {
		t.Errorf("comb uid %d, want a system account (1-999)", uid)
	}
	if g, err := user.LookupGroupId(u.Gid); err != nil || g.Name != "comb" {
		t.Errorf("comb's primary group %v (%v), want comb", g, err)
	}
	passwd := mustRun(t, "getent", "passwd", "comb")
	if !strings.HasSuffix(strings.TrimSpace(passwd), "nologin") || !strings.Contains(passwd, ":/var/lib/comb:") {
		t.Errorf("passwd entry %q: want home /var/lib/comb and a nologin shell", passwd)
	}
	checkOwner(t, "/var/lib/comb", os.ModeDir|0o750, uid, gid)
	checkOwner(t, "/etc/comb/comb.env", 0o640, 0, gid)
	checkOwner(t, "/etc/comb/comb.toml", 0o640, 0, gid)
	checkOwner(t, "/usr/bin/comb", 0o755, 0, 0)

	unitPath := "/usr/lib/systemd/system/comb.service"
	if out, err := exec.Command("systemd-analyze", "verify", unitPath).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// "OK" or better; the threshold fails the command above 2.0.
	if out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--threshold=20", unitPath).CombinedOutput(); err != nil {
		t.Errorf("systemd-analyze security: %v\n%s", err, out)
	}

	unit := unitSettings(t, unitPath)
	for k, want := range map[string]string{
		"Type": "notify", "User": "comb", "Group": "comb", "ExecStart": "/usr/bin/comb serve --config /etc/comb/comb.toml",
		"EnvironmentFile": "/etc/comb/comb.env", "WorkingDirectory": "/var/lib/comb",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ReadWritePaths": "/var/lib/comb",
		"CapabilityBoundingSet": "", "WatchdogSec": "30s", "UMask": "0027",
	} {
		if got, ok := unit[k]; !ok || got != want {
			t.Errorf("unit %s=%q, want %q", k, got, want)
		}
	}
	env := envFile(t, unit["EnvironmentFile"])
	// What the packaged files configure, as comb itself reads them.
	printed := mustRun(t, "/usr/bin/comb", append(strings.Fields(unit["ExecStart"])[1:], "--print-config")...)
	for _, want := range []string{`addr = "127.0.0.1:6632" # file /etc/comb/comb.toml`, `db = "/var/lib/comb/comb.db" # file /etc/comb/comb.toml`} {
		if !strings.Contains(printed, want+"\n") {
			t.Errorf("packaged settings lack %s:\n%s", want, printed)
		}
	}

	runService(t, unit, env)

	if !exists("/var/lib/comb/comb.db") {
		t.Fatal("the service left no /var/lib/comb/comb.db")
	}
	checkOwner(t, "/var/lib/comb/comb.db", 0o600, uid, gid) // comb creates it 0600

	// Reinstalling is an upgrade: the scripts run again, a local edit of
	// the conffile survives, the user stays the same.
	f, err := os.OpenFile("/etc/comb/comb.env", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "COMB_SYNC=NORMAL # local edit")
	f.Close()
	mustRun(t, "dpkg", "-i", deb)
	if b, _ := os.ReadFile("/etc/comb/comb.env"); !bytes.Contains(b, []byte("# local edit")) {
		t.Error("reinstalling replaced the edited /etc/comb/comb.env")
	}
	if u2, err := user.Lookup("comb"); err != nil || u2.Uid != u.Uid {
		t.Errorf("after reinstall comb is %v (%v), want uid %s", u2, err, u.Uid)
	}

	// Remove: the program goes, configuration and data stay.
	mustRun(t, "dpkg", "-r", "comb")
	for _, gone := range []string{"/usr/bin/comb", unitPath, "/usr/share/doc/comb/README.md"} {
		if exists(gone) {
			t.Errorf("%s is still there after dpkg -r", gone)
		}
	}
	if !exists("/etc/comb/comb.env") {
		t.Error("dpkg -r removed the conffile; only a purge should")
	}
	// Purge: the configuration goes too; the database and the user stay,
	// as docs/install.md says.
	mustRun(t, "dpkg", "--purge", "comb")
	if exists("/etc/comb") {
		t.Error("/etc/comb is still there after dpkg --purge")
	}
	if out, _ := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "comb").Output(); len(out) > 0 && string(out) != "not-installed" {
		t.Errorf("dpkg status after purge: %q", out)
	}
	if !exists("/var/lib/comb/comb.db") {
		t.Error("purge deleted the database; docs/install.md promises it stays")
	}
	if _, err := user.Lookup("comb"); err != nil {
		t.Error("purge removed the comb user; docs/install.md says it stays")
	}
}

func checkOwner(t *testing.T, path string, mode os.FileMode, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode() != mode || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("%s: mode %v owner %d:%d, want %v %d:%d", path, fi.Mode(), st.Uid, st.Gid, mode, uid, gid)
	}
}

// runService runs the unit's ExecStart as its User with its environment,
// the way systemd would, and talks to it over HTTP and the notify socket.
func runService(t *testing.T, unit, env map[string]string) {
	t.Helper()
	// A notify socket the comb user may write to, as systemd provides.
	dir, err := os.MkdirTemp("", "comb-notify-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	sock := filepath.Join(dir, "notify")
	mgr, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	os.Chmod(sock, 0o666)

	// The packaged address, on a free port: a developer's machine may
	// already have something on 6632.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	environ := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NOTIFY_SOCKET=" + sock,
		"WATCHDOG_USEC=1000000"} // the unit's is 30s; 1s keeps the test short
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	// The environment overrides the packaged config file's address.
	environ = append(environ, "COMB_ADDR="+addr)
	args := append([]string{"-c", `umask "$0" && exec "$@"`, unit["UMask"],
		"setpriv", "--reuid", unit["User"], "--regid", unit["Group"], "--init-groups",
		"--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"}, strings.Fields(unit["ExecStart"])...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Dir = unit["WorkingDirectory"]
	cmd.Env = environ
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()

	next := func() string {
		t.Helper()
		mgr.SetReadDeadline(time.Now().Add(60 * time.Second))
		buf := make([]byte, 4096)
		n, err := mgr.Read(buf)
		if err != nil {
			t.Fatalf("notify socket: %v\nlogs:\n%s", err, logs.String())
		}
		return string(buf[:n])
	}
	if got := next(); got != "READY=1\nSTATUS=serving" {
		t.Fatalf("first notification %q, want READY=1\nlogs:\n%s", got, logs.String())
	}

	base := "http://" + addr
	resp, err := http.Post(base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"pkgtest","payload":{"installed":"deb"},"transactionId":"deb-1"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"status":"queued"`) {
		t.Fatalf("push: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(base + "/api/v1/pop/queue/pkgtest?batch=1&wait=false")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var pop struct {
		Messages []struct {
			TransactionID string          `json:"transactionId"`
			Data          json.RawMessage `json:"data"`
		} `json:"messages"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &pop) != nil || len(pop.Messages) != 1 ||
		pop.Messages[0].TransactionID != "deb-1" || string(pop.Messages[0].Data) != `{"installed":"deb"}` {
		t.Fatalf("pop: %d %s", resp.StatusCode, body)
	}
	if out, err := exec.Command("/usr/bin/comb", "healthcheck", "--url", base).CombinedOutput(); err != nil {
		t.Fatalf("comb healthcheck: %v\n%s", err, out)
	}
	if got := next(); got != "WATCHDOG=1" {
		t.Fatalf("notification %q, want WATCHDOG=1", got)
	}

	// systemctl stop sends SIGTERM.
	cmd.Process.Signal(syscall.SIGTERM)
	for got := next(); got != "STOPPING=1\nSTATUS=stopping"; got = next() {
		if got != "WATCHDOG=1" {
			t.Fatalf("notification %q after SIGTERM, want STOPPING=1", got)
		}
	}
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatalf("comb serve exited with %v after SIGTERM\nlogs:\n%s", err, logs.String())
		}
	case <-time.After(90 * time.Second): // the unit's TimeoutStopSec
		t.Fatalf("comb serve still running 90s after SIGTERM\nlogs:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("comb serve logged a warning or error:\n%s", logs.String())
	}
}
