package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
)

// logger adapts a *slog.Logger to retryablehttp.LeveledLogger, scrubbing every value it records:
// URLs lose credentials and query values, and each secret becomes "REDACTED". retryablehttp reports a
// failed attempt at error level; that is logged as a warning, since the caller reports the final error.
type logger struct {
	l        *slog.Logger
	provider string
	secrets  []string // none empty
}

func (g *logger) Error(msg string, kv ...any) { g.log(slog.LevelWarn, msg, kv) }
func (g *logger) Warn(msg string, kv ...any)  { g.log(slog.LevelWarn, msg, kv) }
func (g *logger) Info(msg string, kv ...any)  { g.log(slog.LevelInfo, msg, kv) }
func (g *logger) Debug(msg string, kv ...any) { g.log(slog.LevelDebug, msg, kv) }

func (g *logger) log(level slog.Level, msg string, kv []any) {
	ctx := context.Background()
	if !g.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, len(kv)/2+1)
	if g.provider != "" {
		attrs = append(attrs, slog.String("provider", g.provider))
	}
	for i := 0; i+1 < len(kv); i += 2 {
		key := g.scrub(fmt.Sprint(kv[i]))
		attrs = append(attrs, slog.Any(key, g.value(kv[i+1])))
	}
	g.l.LogAttrs(ctx, level, "http: "+g.scrub(msg), attrs...)
}

// value keeps durations and numbers as they are and scrubs the text of everything else.
func (g *logger) value(v any) any {
	switch v := v.(type) {
	case nil, bool, int, int64, float64, interface{ Nanoseconds() int64 }:
		return v
	case string:
		return g.scrub(v)
	case error:
		return g.scrub(v.Error())
	}
	return g.scrub(fmt.Sprint(v))
}

var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

func (g *logger) scrub(s string) string {
	if strings.Contains(s, "://") {
		s = urlPattern.ReplaceAllStringFunc(s, func(raw string) string {
			u, err := url.Parse(raw)
			if err != nil {
				return "REDACTED-URL"
			}
			return redact(u)
		})
	}
	for _, secret := range g.secrets {
		s = strings.ReplaceAll(s, secret, "REDACTED")
	}
	return s
}
