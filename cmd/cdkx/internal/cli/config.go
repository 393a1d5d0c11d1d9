package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Config is the typed configuration of a run, from flags, CDKX_* environment variables and cdkx.json,
// in that order of precedence.
type Config struct {
	// App is the cloud assembly directory (--app, CDKX_APP; default: "output" of cdkx.json, else cdkx.out).
	App string
	// State is where state lives (--state, CDKX_STATE; default .cdkx/state.db): a SQLite path, a
	// postgres:// URL, or an http(s):// state service.
	State string
	// Concurrency bounds provider calls in flight (--concurrency, CDKX_CONCURRENCY; default 10).
	Concurrency int
	// JSON prints machine-readable JSON lines on stdout (--json, CDKX_JSON).
	JSON bool
	// NoColor disables colours (--no-color, CDKX_NO_COLOR, NO_COLOR).
	NoColor bool
	// LockTimeout is how long to wait for a stack's lock (--lock-timeout, CDKX_LOCK_TIMEOUT; 0 fails at once).
	LockTimeout time.Duration
	// Verbose prints warnings and notes (--verbose, CDKX_VERBOSE).
	Verbose bool
	// ProviderConcurrency bounds the calls in flight to one provider, within Concurrency: cdkx.json's
	// "concurrency": {"<provider>": N}, overridden by CDKX_CONCURRENCY_<PROVIDER>=N. Empty when unset.
	ProviderConcurrency map[string]int
	// Passphrase seals and opens the sensitive values of deployment snapshots (CDKX_SECRETS_PASSPHRASE).
	Passphrase string
	// RequireApproval says which plans ask for a confirmation before they run (--require-approval,
	// CDKX_REQUIRE_APPROVAL, cdkx.json's "requireApproval"; default ApprovalDestructive).
	RequireApproval Approval
	// Yes answers every confirmation with yes (--yes, alias --auto-approve; CDKX_YES).
	Yes bool
	// ShowUnchanged lists unchanged resources in the event view instead of only counting them
	// (--show-unchanged, CDKX_SHOW_UNCHANGED).
	ShowUnchanged bool
}

// Approval is a --require-approval level: which plans need a "yes" before they run.
type Approval string

// The approval levels, as the CDK's --require-approval names them.
const (
	// ApprovalNever runs every plan without asking.
	ApprovalNever Approval = "never"
	// ApprovalDestructive asks before a plan that replaces or deletes a resource (the default).
	ApprovalDestructive Approval = "destructive"
	// ApprovalAny asks before a plan that changes anything.
	ApprovalAny Approval = "any"
)

// parseApproval returns the level named s; the error names the flag and the accepted values.
func parseApproval(s, source string) (Approval, error) {
	switch a := Approval(strings.ToLower(strings.TrimSpace(s))); a {
	case ApprovalNever, ApprovalDestructive, ApprovalAny:
		return a, nil
	}
	return "", fmt.Errorf("invalid value %q for %s: want never, destructive or any", s, source)
}

// AddApprovalFlags declares --require-approval and AddYesFlags's flags on a command that runs a plan
// (deploy).
func AddApprovalFlags(fs *pflag.FlagSet) {
	fs.String("require-approval", "", "which plans ask before they run: never, destructive (replacements and deletions; the default) or any")
	AddYesFlags(fs)
}

// AddYesFlags declares --yes (-y) and its alias --auto-approve on a command that asks before it changes
// resources (deploy, destroy).
func AddYesFlags(fs *pflag.FlagSet) {
	fs.BoolP("yes", "y", false, "answer yes to the confirmation: run without asking")
	fs.Bool("auto-approve", false, "the same as --yes (Terraform's name)")
}

// DefaultStatePath is the embedded SQLite state file, relative to the working directory.
const DefaultStatePath = ".cdkx/state.db"

// AddGlobalFlags declares the flags every command accepts.
func AddGlobalFlags(fs *pflag.FlagSet) {
	fs.String("app", "", "cloud assembly directory (default: \"output\" of cdkx.json, else cdkx.out)")
	fs.String("state", DefaultStatePath, "state location: a SQLite file path, a PostgreSQL URL (postgres://user@host:5432/db), or a state service (https://host, with CDKX_TOKEN)")
	fs.Int("concurrency", 10, "maximum provider calls in flight at once")
	fs.Bool("json", false, "print JSON lines on stdout instead of tables")
	fs.Bool("no-color", false, "disable colours")
	fs.Duration("lock-timeout", 0, "how long to wait for a locked stack (0: fail at once)")
	fs.BoolP("verbose", "v", false, "print warnings and notes")
}

// LoadConfig reads the configuration: flags in fs, then CDKX_* environment variables, then cdkx.json in
// the working directory (only its "output" key is used, as the default of --app).
func LoadConfig(fs *pflag.FlagSet, getenv func(string) string) (*Config, error) {
	v := viper.New()
	v.SetEnvPrefix("CDKX")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(fs); err != nil {
		return nil, fmt.Errorf("bind flags: %w", err)
	}
	c := &Config{
		App:         v.GetString("app"),
		State:       v.GetString("state"),
		Concurrency: v.GetInt("concurrency"),
		JSON:        v.GetBool("json"),
		NoColor:     v.GetBool("no-color") || getenv("NO_COLOR") != "",
		LockTimeout: v.GetDuration("lock-timeout"),
		Verbose:     v.GetBool("verbose"),
	}
	// viper reads a malformed variable as zero ("abc" → 0, "5" → 5ns): check what the environment says.
	if err := envValue(fs, getenv, "concurrency", "a whole number, e.g. 10", func(s string) error { _, err := strconv.Atoi(s); return err }); err != nil {
		return nil, err
	}
	if err := envValue(fs, getenv, "lock-timeout", "a duration like 30s, 5m or 1h30m", func(s string) error { _, err := time.ParseDuration(s); return err }); err != nil {
		return nil, err
	}
	if c.Concurrency < 1 {
		return nil, fmt.Errorf("--concurrency must be at least 1, got %d", c.Concurrency)
	}
	if c.LockTimeout < 0 {
		return nil, fmt.Errorf("--lock-timeout must not be negative, got %s", c.LockTimeout)
	}
	file, err := readCdkxJSON("cdkx.json")
	if err != nil {
		return nil, err
	}
	if c.App == "" {
		c.App = file.app()
	}
	c.ProviderConcurrency = file.Concurrency
	c.Passphrase = getenv("CDKX_SECRETS_PASSPHRASE")
	c.Yes = v.GetBool("yes") || v.GetBool("auto-approve")
	c.ShowUnchanged = v.GetBool("show-unchanged")
	c.RequireApproval = ApprovalDestructive
	if level, source := v.GetString("require-approval"), "--require-approval"; level != "" || file.RequireApproval != "" {
		if level == "" {
			level, source = file.RequireApproval, "requireApproval in cdkx.json"
		}
		if c.RequireApproval, err = parseApproval(level, source); err != nil {
			return nil, err
		}
	}
	for _, kv := range environ() {
		name, value, _ := strings.Cut(kv, "=")
		provider, ok := strings.CutPrefix(name, "CDKX_CONCURRENCY_")
		if !ok || provider == "" {
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s must be a whole number of at least 1, got %q", name, value)
		}
		if c.ProviderConcurrency == nil {
			c.ProviderConcurrency = map[string]int{}
		}
		c.ProviderConcurrency[strings.ToLower(provider)] = n
	}
	return c, nil
}

// envValue checks the CDKX_* variable of flag name when the flag itself was not given: parse must accept
// it, else the error names the variable and want.
func envValue(fs *pflag.FlagSet, getenv func(string) string, name, want string, parse func(string) error) error {
	if f := fs.Lookup(name); f != nil && f.Changed {
		return nil
	}
	key := "CDKX_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if v := getenv(key); v != "" && parse(v) != nil {
		return fmt.Errorf("invalid value %q for %s: want %s", v, key, want)
	}
	return nil
}

// environ is os.Environ, a variable for tests.
var environ = os.Environ

// cdkxJSON is what cdkx reads of cdkx.json: {"app": "<command>", "output": "<dir>",
// "concurrency": {"<provider>": N}, "requireApproval": "never|destructive|any",
// "approval": {"requireSecondPerson": bool}}.
type cdkxJSON struct {
	Output          string         `json:"output"`
	RequireApproval string         `json:"requireApproval"`
	Concurrency     map[string]int `json:"concurrency"`
	Approval        struct {
		RequireSecondPerson bool `json:"requireSecondPerson"`
	} `json:"approval"`
}

func (f cdkxJSON) app() string {
	if f.Output == "" {
		return "cdkx.out"
	}
	return filepath.Clean(f.Output)
}

// readCdkxJSON reads cdkx.json; an absent file is an empty configuration.
func readCdkxJSON(path string) (cdkxJSON, error) {
	var cfg cdkxJSON
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w; fix the file (\"concurrency\" maps provider names to whole numbers) or pass --app", path, err)
	}
	for p, n := range cfg.Concurrency {
		if n < 1 {
			return cfg, fmt.Errorf("%s: concurrency.%s must be at least 1, got %d", path, p, n)
		}
	}
	return cfg, nil
}
