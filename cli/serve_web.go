package cli

import (
	"fmt"

	"github.com/comb-broker/comb/httpd"
	"github.com/spf13/pflag"
)

// webFlags decide which web pages and Host names the server answers;
// docs/auth.md explains the rules they feed.
type webFlags struct {
	corsOrigins, allowedHosts string
}

func (m *App) webFlags(fs *pflag.FlagSet) *webFlags {
	w := &webFlags{}
	defer m.setting(fs, "cors-origins", "")
	defer m.setting(fs, "allowed-hosts", "")
	fs.StringVar(&w.corsOrigins, "cors-origins", "",
		"comma-separated web origins (scheme://host[:port]) whose pages may call comb; without auth none but comb's own, with auth all (\"*\") unless listed (env COMB_CORS_ORIGINS)")
	fs.StringVar(&w.allowedHosts, "allowed-hosts", "",
		"comma-separated host names, besides loopback ones, that requests to a loopback address may carry in Host when auth is off (env COMB_ALLOWED_HOSTS)")
	return w
}

// config checks the lists and copies them into cfg.
func (w *webFlags) config(cfg *httpd.Config) error {
	origins, hosts := splitList(w.corsOrigins), splitList(w.allowedHosts)
	if err := httpd.CheckCORSOrigins(origins, cfg.Auth != nil); err != nil {
		return fmt.Errorf("--cors-origins: %w", err)
	}
	if err := httpd.CheckAllowedHosts(hosts); err != nil {
		return fmt.Errorf("--allowed-hosts: %w", err)
	}
	cfg.CORSOrigins, cfg.AllowedHosts = origins, hosts
	return nil
}
