package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Settings are the flags that may also come from the environment and the
// config file: all of serve's, and the operator commands' --url, --token
// and --output. A command's other flags (which queue, which group) say what
// one invocation does and are flags only.
//
// The config file is TOML: flat "key = value" lines named as the flags,
// comments, typed values (strings, numbers, booleans, arrays) and no
// indentation that changes meaning, which is what an operator editing
// /etc/comb/comb.toml over ssh needs; YAML would give the same keys with
// more ways to get them wrong ("no" read as false, tabs, implicit types).

// Flag annotations marking settings.
const (
	annSetting    = "comb/setting"     // value: the old environment name, or ""
	annLegacyUnit = "comb/legacy-unit" // value: unit of a bare number in the old variable
	annSecret     = "comb/secret"      // value shown masked by --print-config
)

const mask = "********"

// settings records where the running command's settings came from.
type settings struct {
	source   map[string]string
	warnings []string
}

func newSettings() *settings { return &settings{source: map[string]string{}} }

func (s *settings) warn(format string, args ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

// envName is the variable that sets flag name: COMB_ and the name in
// capitals, - as _.
func envName(name string) string {
	return "COMB_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// setting marks flag name of fs as a setting; legacyEnv is the variable
// that set it before every variable began with COMB_, still read with a
// warning.
func (m *App) setting(fs *pflag.FlagSet, name, legacyEnv string) {
	if err := fs.SetAnnotation(name, annSetting, []string{legacyEnv}); err != nil {
		panic(err) // a flag defined in this package is missing: a bug here
	}
}

// secret marks a setting whose value --print-config masks.
func (m *App) secret(fs *pflag.FlagSet, name, legacyEnv string) {
	m.setting(fs, name, legacyEnv)
	_ = fs.SetAnnotation(name, annSecret, []string{"true"})
}

// durationSetting defines a Go duration setting. A bare number, as the
// flag or its old variable took before, is read in legacyUnit with a
// warning; with legacyUnit 0 only a Go duration is accepted.
func (m *App) durationSetting(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, legacyEnv string, legacyUnit time.Duration, usage string) {
	*p = def
	fs.Var(&durationValue{p: p, name: name, legacyUnit: legacyUnit, s: m.settings}, name, usage)
	m.setting(fs, name, legacyEnv)
}

type durationValue struct {
	p          *time.Duration
	name       string
	legacyUnit time.Duration
	s          *settings
}

func (d *durationValue) String() string { return d.p.String() }
func (d *durationValue) Type() string   { return "duration" }
func (d *durationValue) Set(v string) error {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && d.legacyUnit != 0 && n != 0 {
		if n < 0 {
			return fmt.Errorf("%q: want a non-negative duration such as 5m", v)
		}
		*d.p = time.Duration(n) * d.legacyUnit
		d.s.warn("--%s %s: a bare number is read as %s as before; write a Go duration: %s", d.name, v, unitName(d.legacyUnit), d.p)
		return nil
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: want a Go duration such as 500ms, 30s, 5m or 1h", v)
	}
	*d.p = t
	return nil
}

func unitName(u time.Duration) string {
	switch u {
	case time.Millisecond:
		return "milliseconds"
	case time.Second:
		return "seconds"
	}
	return u.String()
}

// applySettings fills every setting of cmd not given as a flag from its
// COMB_ variable, else its old variable (with a warning), else the config
// file, leaving the default otherwise.
func (m *App) applySettings(cmd *cobra.Command) error {
	s := m.settings
	flags := cmd.Flags()
	file, fileName, err := m.readConfig(cmd)
	if err != nil {
		return err
	}
	var errs []error
	flags.VisitAll(func(f *pflag.Flag) {
		ann, ok := f.Annotations[annSetting]
		if !ok {
			return
		}
		if f.Changed {
			s.source[f.Name] = "flag"
			return
		}
		if v := m.Getenv(envName(f.Name)); v != "" {
			s.source[f.Name] = "env " + envName(f.Name)
			if err := setFromEnv(f, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
			return
		}
		if old := ann[0]; old != "" {
			if v := m.Getenv(old); v != "" {
				s.source[f.Name] = "env " + old
				s.warn("environment variable %s is an old name: use %s", old, envName(f.Name))
				if u := f.Annotations[annLegacyUnit]; len(u) == 1 {
					if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
						unit, _ := time.ParseDuration(u[0])
						v = (time.Duration(n) * unit).String()
					}
				}
				if err := setFromEnv(f, v); err != nil {
					errs = append(errs, fmt.Errorf("%s=%q: %w", old, v, err))
				}
				return
			}
		}
		if v, ok := file[f.Name]; ok {
			s.source[f.Name] = "file " + fileName
			if err := setFromFile(f, v); err != nil {
				errs = append(errs, fmt.Errorf("config %s: %s: %w", fileName, f.Name, err))
			}
			return
		}
		s.source[f.Name] = "default"
	})
	if err := errors.Join(errs...); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	return nil
}

// isList reports whether f takes one value per use (--forward).
func isList(f *pflag.Flag) bool {
	_, ok := f.Value.(pflag.SliceValue)
	return ok
}

// setFromEnv sets f from a variable; a list takes its items separated by ";".
func setFromEnv(f *pflag.Flag, v string) error {
	if !isList(f) {
		return f.Value.Set(v)
	}
	for _, item := range strings.Split(v, ";") {
		if item = strings.TrimSpace(item); item != "" {
			if err := f.Value.Set(item); err != nil {
				return err
			}
		}
	}
	f.Changed = true
	return nil
}

func setFromFile(f *pflag.Flag, v any) error {
	if items, ok := v.([]any); ok {
		if !isList(f) {
			return errors.New("one value, not a list")
		}
		for _, it := range items {
			if err := f.Value.Set(fmt.Sprint(it)); err != nil {
				return err
			}
		}
		f.Changed = true
		return nil
	}
	switch v := v.(type) {
	case string:
		return f.Value.Set(v)
	case int64, bool, float64:
		return f.Value.Set(fmt.Sprint(v))
	}
	return fmt.Errorf("%v: want a string, number or boolean", v)
}

// readConfig reads the file --config (or COMB_CONFIG) names, refusing keys
// that are no setting of any command, so a misspelt key is not silently
// ignored.
func (m *App) readConfig(cmd *cobra.Command) (map[string]any, string, error) {
	name, _ := cmd.Flags().GetString("config")
	if !cmd.Flags().Changed("config") {
		name = m.Getenv("COMB_CONFIG")
	}
	if name == "" {
		return nil, "", nil
	}
	file := map[string]any{}
	md, err := toml.DecodeFile(name, &file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", &exitError{code: ExitUsage, err: fmt.Errorf("config: %w", err)}
	}
	if err != nil {
		return nil, "", &exitError{code: ExitUsage, err: fmt.Errorf("config %s: %w", name, err)}
	}
	known := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if _, ok := f.Annotations[annSetting]; ok {
					known[f.Name] = true
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd.Root())
	for _, k := range md.Keys() {
		if len(k) > 1 {
			return nil, "", usageErrorf("config %s: %s: tables are not settings; keys are the flags' names at the top level", name, k)
		}
		if !known[k[0]] || k[0] == "config" {
			return nil, "", usageErrorf("config %s: unknown key %q (keys are the flags' names, e.g. addr, db, jwt-secret)", name, k[0])
		}
	}
	return file, name, nil
}

// printConfig writes the settings cmd runs with as a TOML config file,
// each with where it came from, secrets masked.
func (m *App) printConfig(w io.Writer, cmd *cobra.Command) error {
	fmt.Fprintln(w, "# comb serve's settings: flag > environment > config file > default; secrets masked")
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[annSetting]; !ok || f.Name == "config" || err != nil {
			return
		}
		_, secret := f.Annotations[annSecret]
		_, err = fmt.Fprintf(w, "%s = %s # %s\n", f.Name, tomlValue(f, secret), m.settings.source[f.Name])
	})
	return err
}

var tokenInSpec = regexp.MustCompile(`(^|,)token=[^,]*`)

func tomlValue(f *pflag.Flag, secret bool) string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		items := sv.GetSlice()
		q := make([]string, len(items))
		for i, it := range items {
			// A forwarder's upstream token is a secret inside the spec.
			q[i] = strconv.Quote(tokenInSpec.ReplaceAllString(it, "${1}token="+mask))
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	v := f.Value.String()
	if secret && v != "" {
		return strconv.Quote(mask)
	}
	switch f.Value.Type() {
	case "bool", "int", "int64", "uint", "uint64", "float64":
		return v
	}
	return strconv.Quote(v)
}
