package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// State is where state lives (--state, CDKX_STATE; default .cdkx/state.db).
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
}

// DefaultStatePath is the embedded SQLite state file, relative to the working directory.
const DefaultStatePath = ".cdkx/state.db"

// AddGlobalFlags declares the flags every command accepts.
func AddGlobalFlags(fs *pflag.FlagSet) {
	fs.String("app", "", "cloud assembly directory (default: \"output\" of cdkx.json, else cdkx.out)")
	fs.String("state", DefaultStatePath, "state location: a SQLite file path")
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
	if c.Concurrency < 1 {
		return nil, fmt.Errorf("--concurrency must be at least 1, got %d", c.Concurrency)
	}
	if c.LockTimeout < 0 {
		return nil, fmt.Errorf("--lock-timeout must not be negative, got %s", c.LockTimeout)
	}
	if c.App == "" {
		app, err := appFromCdkxJSON("cdkx.json")
		if err != nil {
			return nil, err
		}
		c.App = app
	}
	return c, nil
}

// appFromCdkxJSON returns the "output" of cdkx.json, or "cdkx.out" when the file or the key is absent.
func appFromCdkxJSON(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "cdkx.out", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	var cfg struct {
		Output string `json:"output"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w; fix the file or pass --app", path, err)
	}
	if cfg.Output == "" {
		return "cdkx.out", nil
	}
	return filepath.Clean(cfg.Output), nil
}
